/**
 * The MCP task fronts: one middleware that answers a `tools/call` with a task and serves the
 * `tasks/*` methods, for both task protocols: 2025-11-25 (`./legacy.ts`, `params.task`) and the
 * 2026-07-28 tasks extension `io.modelcontextprotocol/tasks` (`./modern.ts`). What both share
 * (options, owner, gate, start) is in `./shared.ts`.
 *
 * Running the job (detached from the request, its signal, TTL, re-entry with answers) is the
 * engine's (`TaskEngine`).
 */
import type { JsonObject, Middleware, RequestInfo, ServerHost } from '@mcp-tether/core';
import { LegacyTaskFront, TASKS_2025_CAPABILITY } from './legacy.js';
import { ModernTaskFront } from './modern.js';
import { TaskFrontCore, type TaskFrontOptions } from './shared.js';
import { TASKS_EXTENSION, detailedTask2026, task2025 } from './wire.js';

export type { TaskFrontOptions, TaskSupport } from './shared.js';

/**
 * The task front middleware. Put it outermost among the middlewares of a call that may become a
 * task (the job runs the rest of the chain, detached). One instance may serve many servers (it is
 * how a 2026 task created on one per-request server is polled on another).
 * @throws TypeError for a non-positive `ttlMs`, `maxTtlMs`, `pollIntervalMs`, `listLimit` or `inputTimeoutMs`
 */
export function taskFront(options: TaskFrontOptions): Middleware {
  const core = new TaskFrontCore(options);
  const legacy = new LegacyTaskFront(core);
  const modern = new ModernTaskFront(core);
  type Handler = (host: ServerHost, params: JsonObject, info: RequestInfo) => Promise<JsonObject>;
  const serve = (host: ServerHost, handler: Handler) => (params: JsonObject, info: RequestInfo) =>
    handler(host, params, info);

  const tasksGet: Handler = async (host, params, info) => {
    core.gate(info, 'tasks/get');
    const { job } = await core.find(params, info, host);
    if (info.era !== 'modern') return task2025(job);
    // 2026: a task's progress has no stream of its own (DetailedTask carries none, and progress never
    // rides a listen stream): a tasks/get that carries a progress token gets the task's progress on it.
    const token = info.meta.progressToken;
    if ((typeof token === 'string' || typeof token === 'number') && job.status === 'working' && info.notify) {
      if (typeof job.progress === 'number') {
        const p: JsonObject = { progressToken: token, progress: job.progress };
        if (job.total !== undefined) p.total = job.total;
        if (job.statusMessage !== undefined) p.message = job.statusMessage;
        await info.notify({ method: 'notifications/progress', params: p }).catch(() => undefined);
      }
    }
    return detailedTask2026(job);
  };
  const tasksCancel: Handler = (host, params, info) => {
    core.gate(info, 'tasks/cancel');
    return info.era === 'modern' ? modern.cancel(host, params, info) : legacy.cancel(host, params, info);
  };

  return {
    name: 'tasks',
    // A task's handler reads its answers with mrtr's readInput() & co.: calls run in async context.
    asyncContext: true,
    setup(host: ServerHost) {
      // 2025-11-25 capability (SDK 1.x also refuses `params.task` calls without it); on SDK 2.x the
      // extension too: its 2026 codec drops `tasks` from server/discover, and under 2025-11-25 the
      // extension has no effect.
      host.registerCapabilities(
        host.sdk === 'v2'
          ? { tasks: TASKS_2025_CAPABILITY, extensions: { [TASKS_EXTENSION]: {} } }
          : { tasks: TASKS_2025_CAPABILITY },
      );
      host.handleRequest('tasks/get', serve(host, tasksGet));
      host.handleRequest('tasks/cancel', serve(host, tasksCancel));
      host.handleRequest(
        'tasks/result',
        serve(host, (h, p, i) => legacy.result(h, p, i)),
      );
      host.handleRequest(
        'tasks/list',
        serve(host, (h, p, i) => legacy.list(h, p, i)),
      );
      host.handleRequest(
        'tasks/update',
        serve(host, (h, p, i) => modern.update(h, p, i)),
      );
      // execution.taskSupport on the listed tools (2025-11-25; the 2026 codec strips `execution`).
      host.transformResult?.('tools/list', (result) => {
        const tools = result.tools;
        if (!Array.isArray(tools)) return result;
        return {
          ...result,
          tools: tools.map((tool: JsonObject) => {
            const mode = typeof tool?.name === 'string' ? core.support(tool.name) : 'forbidden';
            if (mode === 'forbidden') return tool;
            return { ...tool, execution: { ...((tool.execution as JsonObject | undefined) ?? {}), taskSupport: mode } };
          }),
        };
      });
      host.onClose(() => legacy.closeHost(host));
    },
    when: (ctx) => ctx.method === 'tools/call',
    handle: (ctx, next) => {
      const mode = core.support(ctx.name);
      return ctx.era === 'legacy' ? legacy.call(ctx, next, mode) : modern.call(ctx, next, mode);
    },
    // Progress of a job becomes its status (the engine's tap); once the request was answered
    // (a task handle) nothing more may ride its stream.
    onEvent(ctx, event, next) {
      if (core.engine.tap(ctx, event)) return;
      return next(event);
    },
  };
}
