/** Why a call was aborted by the client (each one also sent `notifications/cancelled`). */
export type CallAbortKind =
  /** Neither progress nor a result for `silenceMs` (the progress-silence watchdog). */
  | 'silence'
  /** `timeoutMs` passed (since the last progress, when the timeout resets on progress). */
  | 'timeout'
  /** `maxTotalMs` passed since the call started, whatever progress came. */
  | 'total'
  /** The caller's `signal` aborted. */
  | 'cancelled';

/**
 * A call the client gave up on. Thrown by `callTool` (and the job and task helpers) after
 * `notifications/cancelled` was sent for the request (or, on a 2026-07-28 HTTP connection, its
 * response stream was closed, which is the cancel there).
 */
export class CallAbortedError extends Error {
  override readonly name = 'CallAbortedError';
  constructor(
    message: string,
    /** What made the client give up. */
    readonly kind: CallAbortKind,
    /** Tool name (or request method for non-tool requests). */
    readonly target: string,
    /** Milliseconds from sending the request to the abort. */
    readonly elapsedMs: number,
    /** The last progress notification received for the call, if any. */
    readonly lastProgress?: ProgressReport,
    options?: { cause?: unknown },
  ) {
    super(message, options);
  }
}

/** True for a {@link CallAbortedError}, also one made by another copy of this package. */
export function isCallAborted(error: unknown): error is CallAbortedError {
  return error instanceof CallAbortedError || (error instanceof Error && error.name === 'CallAbortedError');
}

/** A job or task that ended `failed` (or `cancelled` by someone else), or a job that needs input nobody can give. */
export class JobError extends Error {
  override readonly name = 'JobError';
  constructor(
    message: string,
    /** The job handle's `jobId` or the task's `taskId`. */
    readonly jobId: string,
    /** Final status: `failed`, `cancelled`, or `input_required` when no `onInputRequest` was given. */
    readonly status: string,
    /** The JSON-RPC error the job failed with, when it failed by one (`{ code, message, data? }`). */
    readonly error?: { code: number; message: string; data?: unknown },
  ) {
    super(message);
  }
}

/** One `notifications/progress` as the caller's `onProgress` gets it. */
export interface ProgressReport {
  /** Progress so far, in the unit of `total` (any unit when `total` is absent). */
  progress: number;
  total?: number;
  message?: string;
}

/** An abort reason as text (an `Error`'s message, `'aborted'` for none). */
export function reasonText(reason: unknown): string {
  if (reason instanceof Error) return reason.message;
  return reason === undefined ? 'aborted' : String(reason);
}
