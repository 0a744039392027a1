/**
 * What both task fronts share: the options as read once, the owner of a `tasks/*` request, the
 * 2026 extension gate, finding a task for its owner, and starting a job (or the `BUSY` refusal).
 */
import {
  ErrorCode,
  refuse,
  type CallContext,
  type CallResult,
  type JsonObject,
  type Next,
  type RequestInfo,
  type ServerHost,
} from '@mcp-tether/core';
import { requestOwnerSource } from '../owner.js';
import { isJobLimit, type JobRecord } from '../store.js';
import type { TaskEngine } from './port.js';
import { declaresTasksExtension, missingTasksExtension, taskIdOf, taskNotFound } from './wire.js';

/** MCP `Tool.execution.taskSupport`. */
export type TaskSupport = 'forbidden' | 'optional' | 'required';

/** Options of {@link taskFront}. */
export interface TaskFrontOptions {
  /** The job runner. */
  engine: TaskEngine;
  /**
   * Which tools may run as tasks (MCP `execution.taskSupport`), by tool name, or a function of the
   * name. A tool not named is `forbidden`. `optional`: a task when the client asks for one (2025
   * `params.task`) or declares the extension (2026); else the call runs inline as usual.
   * `required`: a call that cannot become a task is refused (2025: `-32601`; 2026: `-32021`).
   */
  taskSupport: Readonly<Record<string, Exclude<TaskSupport, 'forbidden'>>> | ((tool: string) => TaskSupport);
  /**
   * 2026-07-28: tools whose first round asks the user over MRTR before any task exists (SEP-2663:
   * MRTR exchanges SHOULD finish before the task is created). A request to such a tool that carries
   * no `inputResponses` runs inline as usual (its `input_required` goes back to the client, sealed
   * by `@mcp-tether/mrtr` placed before this front); the retry with the answers becomes the task.
   * Other tools become a task on the first request and ask inside it (`tasks/get` → `tasks/update`).
   */
  askFirst?: readonly string[] | ((tool: string) => boolean);
  /** TTL of a task whose client asks for none (2025) and of every 2026 task, ms. Default 3 600 000 (1 h). */
  ttlMs?: number;
  /** Longest TTL granted to a 2025 client's `params.task.ttl`, ms. Default 86 400 000 (24 h). */
  maxTtlMs?: number;
  /** Suggested poll interval (`pollInterval` / `pollIntervalMs`), ms. Default 1 000. */
  pollIntervalMs?: number;
  /** `tasks/list` page size (2025). Default 50. */
  listLimit?: number;
  /** How long a 2025 `tasks/result` waits for the client to answer one elicitation, ms. Default 600 000. */
  inputTimeoutMs?: number;
  /** Where errors of background sends go (a notification that could not be delivered). Default: dropped. */
  onError?: (error: unknown) => void;
}

/** The options of {@link taskFront}, checked and with their defaults, and the helpers both eras use. */
export class TaskFrontCore {
  readonly engine: TaskEngine;
  readonly support: (tool: string) => TaskSupport;
  readonly askFirst: (tool: string) => boolean;
  readonly ttlDefault: number;
  readonly ttlMax: number;
  readonly pollIntervalMs: number;
  readonly listLimit: number;
  readonly inputTimeoutMs: number;
  /** Where errors of background sends go (never throws). */
  readonly reportError: (error: unknown) => void;

  constructor(options: TaskFrontOptions) {
    this.engine = options.engine;
    this.support =
      typeof options.taskSupport === 'function'
        ? options.taskSupport
        : (tool: string): TaskSupport =>
            Object.hasOwn(options.taskSupport, tool)
              ? (options.taskSupport as Record<string, TaskSupport>)[tool]!
              : 'forbidden';
    const askFirstOption = options.askFirst;
    this.askFirst =
      typeof askFirstOption === 'function'
        ? askFirstOption
        : askFirstOption === undefined
          ? () => false
          : (
              (set) => (tool: string) =>
                set.has(tool)
            )(new Set(askFirstOption));
    this.ttlDefault = positive(options.ttlMs, 3_600_000, 'ttlMs');
    this.ttlMax = positive(options.maxTtlMs, 86_400_000, 'maxTtlMs');
    this.pollIntervalMs = positive(options.pollIntervalMs, 1_000, 'pollIntervalMs');
    this.listLimit = positive(options.listLimit, 50, 'listLimit');
    this.inputTimeoutMs = positive(options.inputTimeoutMs, 600_000, 'inputTimeoutMs');
    this.reportError = (err: unknown) => {
      try {
        options.onError?.(err);
      } catch {
        /* never let reporting fail a task */
      }
    };
  }

  /**
   * The owner a `tasks/*` request maps to: the engine's owner rule applied to the request's
   * principal, session, era and connection (the fields that rule reads of a call).
   */
  ownerOfInfo(info: RequestInfo, host: ServerHost): string {
    return this.engine.ownerOf(requestOwnerSource(info, host));
  }

  /** On 2026-07-28 every tasks/* request must declare the extension itself (-32021 otherwise). */
  gate(info: RequestInfo, method: string): void {
    if (info.era === 'modern' && !declaresTasksExtension(info.clientCapabilities)) throw missingTasksExtension(method);
  }

  /** The task of `params.taskId` as the requestor's owner sees it. @throws ProtocolError task not found */
  async find(
    params: JsonObject,
    info: RequestInfo,
    host: ServerHost,
  ): Promise<{ id: string; owner: string; job: JobRecord }> {
    const id = taskIdOf(params);
    const owner = this.ownerOfInfo(info, host);
    const job = await this.engine.get(id, owner);
    if (job === undefined) throw taskNotFound(id);
    return { id, owner, job };
  }

  /** Start the job; `'client'` or `'global'` when a live-job cap refused it (see {@link TaskCore.busy}). */
  async startOrRefuse(
    ctx: CallContext,
    next: Next,
    mode: 'task-2025' | 'task-2026',
    ttlMs: number | null,
  ): Promise<JobRecord | 'client' | 'global'> {
    try {
      return await this.engine.start(ctx, next, { mode, ttlMs, pollIntervalMs: this.pollIntervalMs });
    } catch (err) {
      if (isJobLimit(err)) return (err as { scope?: unknown }).scope === 'global' ? 'global' : 'client';
      throw err;
    }
  }

  /** The refusal the model reads when a live-job cap is reached (a tool result, not a task). */
  busy(ctx: CallContext, scope: 'client' | 'global' = 'client'): CallResult {
    return refuse(
      ctx,
      ErrorCode.BUSY,
      scope === 'global'
        ? 'The server is running as many tasks as it takes. Try again later.'
        : 'Too many of your tasks are running. Wait for one to finish or cancel one (tasks/cancel), then try again.',
      { scope },
    );
  }
}

function positive(value: number | undefined, fallback: number, name: string): number {
  if (value === undefined) return fallback;
  if (!(typeof value === 'number' && Number.isFinite(value) && value > 0))
    throw new TypeError(`taskFront: ${name} must be a positive number of ms`);
  return value;
}
