/**
 * The 2026-07-28 tasks extension front `io.modelcontextprotocol/tasks` (SEP-2663): the request
 * declares the extension in its `_meta` client capabilities; the answer is the flat
 * `CreateTaskResult` (`resultType: "task"`), sent only once the task is stored; `tasks/get`
 * (DetailedTask), `tasks/update` (answers reach the handler through `readInput`), `tasks/cancel`;
 * `tasks/result` and `tasks/list` do not exist (the SDK's era gate answers `-32601`).
 */
import {
  JsonRpcErrorCode,
  ProtocolError,
  type CallContext,
  type CallResult,
  type JsonObject,
  type Next,
  type RequestInfo,
  type ServerHost,
} from '@mcp-tether/core';
import type { TaskFrontCore, TaskSupport } from './shared.js';
import { createTaskResult2026, declaresTasksExtension, missingTasksExtension, taskIdOf, terminal } from './wire.js';

/** The 2026-07-28 half of `taskFront`: calls that declared the extension, `tasks/update` and `tasks/cancel`. */
export class ModernTaskFront {
  constructor(private readonly core: TaskFrontCore) {}

  /** A 2026-07-28 `tools/call`: the server decides; a task only for a request that declared the extension. */
  async call(ctx: CallContext, next: Next, mode: TaskSupport): Promise<CallResult> {
    if (!declaresTasksExtension(ctx.clientCapabilities)) {
      if (mode === 'required') throw missingTasksExtension(`tool ${ctx.name} (it runs only as a task)`);
      return next();
    }
    if (mode === 'forbidden') return next();
    // MRTR first: a round without answers yet runs inline; only a retry carrying answers becomes the task.
    if (
      this.core.askFirst(ctx.name) &&
      (ctx.inputResponses === undefined || Object.keys(ctx.inputResponses).length === 0)
    )
      return next();
    const job = await this.core.startOrRefuse(ctx, next, 'task-2026', this.core.ttlDefault);
    if (typeof job === 'string') return this.core.busy(ctx, job);
    return createTaskResult2026(job);
  }

  /** 2026 `tasks/cancel`: cooperative and eventually consistent: an empty ack, also for a task already terminal. */
  async cancel(host: ServerHost, params: JsonObject, info: RequestInfo): Promise<JsonObject> {
    const { id, owner, job } = await this.core.find(params, info, host);
    if (!terminal(job.status)) await this.core.engine.cancel(id, owner, 'task cancelled by the client (tasks/cancel)');
    return {};
  }

  /** 2026 `tasks/update`: answers to outstanding input requests; an empty ack, unknown or answered keys ignored. */
  async update(host: ServerHost, params: JsonObject, info: RequestInfo): Promise<JsonObject> {
    // The tasks extension's method; 2025-11-25 has none (its answers come through tasks/result's elicitations).
    if (info.era === 'legacy')
      throw new ProtocolError(
        JsonRpcErrorCode.MethodNotFound,
        'Method not found: tasks/update belongs to the 2026-07-28 tasks extension',
      );
    this.core.gate(info, 'tasks/update');
    const responses = params.inputResponses;
    const id = taskIdOf(params);
    if (typeof responses !== 'object' || responses === null || Array.isArray(responses)) {
      throw new ProtocolError(
        JsonRpcErrorCode.InvalidParams,
        'Invalid params: inputResponses must be an object of responses by input request key',
      );
    }
    const { owner } = await this.core.find(params, info, host);
    // The engine takes the answers to outstanding keys only (unknown and answered keys are ignored)
    // and refuses malformed ones with -32602; a task not waiting for input takes none.
    await this.core.engine.answer(id, owner, responses);
    return {};
  }
}
