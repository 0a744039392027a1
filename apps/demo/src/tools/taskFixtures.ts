/**
 * Fixtures the official conformance suite's tasks-extension scenarios (`tasks-*`, SEP-2663,
 * `@modelcontextprotocol/conformance` 0.2.0-alpha.12) call by name, served by the demo's task front
 * (`@mcp-tether/jobs`). Registered only with `--conformance`; `npm run conformance` runs the scenarios
 * (`--wire tasks`).
 */
import { sleep } from '@mcp-tether/cancel';
import { ProtocolError, type CallContext, type Middleware } from '@mcp-tether/core';
import { ask, readInputResult, requireInput } from '@mcp-tether/mrtr';
import { z } from 'zod';
import { text, tool, type DemoServer } from './register.js';

/** `execution.taskSupport` of the fixtures (`greet` is sync-only: not named). */
export const TASK_FIXTURE_SUPPORT = {
  test_tool_with_task: 'required',
  slow_compute: 'optional',
  failing_job: 'required',
  protocol_error_job: 'optional',
  confirm_delete: 'optional',
  multi_input: 'optional',
} as const;

/** Fixtures that ask over MRTR before any task exists (the task front's `askFirst`). */
export const TASK_FIXTURE_ASK_FIRST = ['test_tool_with_task'] as const;

/**
 * `protocol_error_job` fails with a protocol-level error (JSON-RPC `-32603`), not a tool error: a
 * throw from the tool itself would become an `isError` result (the SDKs' `McpServer` turn it into
 * one), so the fault is thrown by this middleware, inside the job (innermost, after `jobs()`).
 */
export const protocolFault: Middleware = {
  name: 'conformance-protocol-fault',
  when: (ctx: CallContext) => ctx.method === 'tools/call' && ctx.name === 'protocol_error_job',
  handle: async () => {
    throw new ProtocolError(-32603, 'protocol_error_job: internal failure');
  },
};

/** Register the tasks-extension fixtures on `server`. */
export function registerTaskFixtures(server: DemoServer): void {
  tool(
    server,
    'greet',
    { description: 'Conformance (tasks): sync-only greeting', inputSchema: z.object({ name: z.string() }) },
    async ({ name }) => text(`Hello, ${name}!`),
  );

  tool(
    server,
    'slow_compute',
    {
      description: 'Conformance (tasks): sleeps `seconds`, then answers',
      inputSchema: z.object({ seconds: z.number().min(0).max(600), label: z.string().optional() }),
    },
    async ({ seconds, label }, ctx) => {
      await sleep(seconds * 1000, ctx.signal);
      return text(`computed ${label ?? ''} in ${seconds}s`);
    },
  );

  tool(
    server,
    'failing_job',
    { description: 'Conformance (tasks): a tool error after ~1 s (task support required)', inputSchema: z.object({}) },
    async (_args, ctx) => {
      await sleep(1000, ctx.signal);
      return { ...text('failing_job: the job failed'), isError: true };
    },
  );

  tool(
    server,
    'protocol_error_job',
    { description: 'Conformance (tasks): fails with a protocol error', inputSchema: z.object({}) },
    async () => text('never'),
  );

  const confirm = { confirm: ask.boolean('Delete the file?') };
  tool(
    server,
    'confirm_delete',
    { description: 'Conformance (tasks): asks before it deletes', inputSchema: z.object({ filename: z.string() }) },
    async ({ filename }) => {
      const answer = readInputResult(confirm);
      if (!answer) return requireInput.elicit(`Delete ${filename}?`, confirm);
      return text(answer.action === 'accept' && answer.content.confirm ? `deleted ${filename}` : 'kept');
    },
  );

  const first = { name: ask.string('Name') };
  const second = { confirm: ask.boolean('Confirm') };
  tool(
    server,
    'multi_input',
    { description: 'Conformance (tasks): two questions pending at once', inputSchema: z.object({}) },
    async () => {
      const a = readInputResult(first);
      const b = readInputResult(second);
      if (!a || !b) {
        return {
          resultType: 'input_required' as const,
          inputRequests: {
            ...(!a ? requireInput.elicit('Your name?', first).inputRequests : {}),
            ...(!b ? requireInput.elicit('Confirm?', second).inputRequests : {}),
          },
        };
      }
      return text('both answered');
    },
  );

  const user = { name: ask.string('Your name') };
  tool(
    server,
    'test_tool_with_task',
    { description: 'Conformance (tasks): asks over MRTR, then becomes a task', inputSchema: z.object({}) },
    async () => {
      const answer = readInputResult(user);
      if (!answer) return requireInput.elicit('Who are you?', user, { key: 'user_name' });
      return text(`hello ${answer.action === 'accept' ? answer.content.name : 'nobody'}`);
    },
  );
}
