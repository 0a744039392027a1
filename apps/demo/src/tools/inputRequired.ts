/**
 * Fixtures of the official conformance suite for SEP-2322 (multi round-trip requests, protocol
 * 2026-07-28; shared/reference/conformance.md §2.1). Built with @mcp-tether/mrtr like the demo's own
 * interactive tools: the handler returns "input needed" (`requireInput.*` or a hand-built
 * `input_required` outcome for sampling and roots), the middleware serves it (an `input_required`
 * result with a sealed `requestState` on 2026-07-28; a live `elicitation/create` /
 * `sampling/createMessage` / `roots/list` on 2025-era sessions) and runs the handler again with the
 * answers (`readInput*`, `readRequestState`). Registered on both SDK lines.
 */
import type { InputRequiredResult } from '@mcp-tether/core';
import { ask, canElicit, readInput, readInputResult, readRequestState, requireInput } from '@mcp-tether/mrtr';
import { z } from 'zod';
import { prompt, text, tool, type DemoServer } from './register.js';

const userName = { name: ask.string('Your name').maxLength(200) };
const confirm = { ok: ask.boolean('Proceed?') };
const step1 = { name: ask.string('Step 1: your name').maxLength(200) };
const step2 = { color: ask.string('Step 2: your favourite colour').maxLength(200) };
const userContext = { context: ask.string('Context for the prompt').maxLength(2_000) };

/** A `sampling/createMessage` input request (hand-built: mrtr has no helper for sampling). */
const samplingRequest = (question: string) => ({
  method: 'sampling/createMessage' as const,
  params: { messages: [{ role: 'user', content: { type: 'text', text: question } }], maxTokens: 100 },
});
/** A `roots/list` input request. */
const rootsRequest = { method: 'roots/list' as const, params: {} };

/** The text of a sampling answer (`CreateMessageResult.content`), if any. */
function samplingText(answer: unknown): string | undefined {
  const content = (answer as { content?: unknown } | undefined)?.content;
  const blocks = Array.isArray(content) ? content : [content];
  const t = blocks.find((b): b is { type: 'text'; text: string } => (b as { type?: unknown })?.type === 'text');
  return t?.text;
}

/** The URIs of a `roots/list` answer, if any. */
function rootUris(answer: unknown): string[] | undefined {
  const roots = (answer as { roots?: unknown } | undefined)?.roots;
  return Array.isArray(roots) ? roots.map((r) => String((r as { uri?: unknown })?.uri)) : undefined;
}

/** Register the SEP-2322 fixtures (tools and the prompt) on `server`. */
export function registerInputRequiredFixtures(server: DemoServer): void {
  tool(
    server,
    'test_input_required_result_elicitation',
    {
      description: 'Conformance (SEP-2322): asks for the user name (inputRequests.user_name)',
      inputSchema: z.object({}),
    },
    async () => {
      const answer = readInputResult(userName);
      if (!answer) return requireInput.elicit('What is your name?', userName, { key: 'user_name' });
      if (answer.action !== 'accept') return text(`No name given (${answer.action}).`);
      return text(`Hello, ${answer.content.name}!`);
    },
  );

  tool(
    server,
    'test_input_required_result_request_state',
    {
      description: 'Conformance (SEP-2322): a confirmation carried with a sealed requestState',
      inputSchema: z.object({}),
    },
    async () => {
      const answer = readInputResult(confirm);
      const state = readRequestState<{ step: string }>();
      if (!answer)
        return requireInput.elicit('Confirm to continue', confirm, { key: 'confirm', state: { step: 'confirm' } });
      if (state?.step !== 'confirm') return text('state-missing');
      return text(`state-ok: confirmed=${answer.action === 'accept' && answer.content.ok}`);
    },
  );

  tool(
    server,
    'test_input_required_result_multi_round',
    {
      description: 'Conformance (SEP-2322): step1 → step2 → complete, 3 rounds, a new requestState each round',
      inputSchema: z.object({}),
    },
    async () => {
      const first = readInput(step1);
      if (!first) return requireInput.elicit('Step 1 of 2', step1, { key: 'step1', state: { round: 1 } });
      const second = readInput(step2);
      if (!second)
        return requireInput.elicit('Step 2 of 2', step2, { key: 'step2', state: { round: 2, name: first.name } });
      return text(
        `Completed 2 steps: name=${first.name}, color=${second.color} (state round ${readRequestState<{ round: number }>()?.round})`,
      );
    },
  );

  tool(
    server,
    'test_input_required_result_tampered_state',
    {
      description: 'Conformance (SEP-2322): its requestState is sealed (HMAC); a tampered one is rejected with -32602',
      inputSchema: z.object({}),
    },
    async () => {
      const answer = readInputResult(confirm);
      if (!answer)
        return requireInput.elicit('Confirm to continue', confirm, {
          key: 'confirm',
          state: { nonce: 'tamper-check' },
        });
      return text(`state verified: ${JSON.stringify(readRequestState())}`);
    },
  );

  tool(
    server,
    'test_input_required_result_capabilities',
    {
      description: 'Conformance (SEP-2322): asks only through what this request declared (elicitation, else sampling)',
      inputSchema: z.object({}),
    },
    async (_args, ctx): Promise<ReturnType<typeof text> | InputRequiredResult> => {
      const viaForm = readInputResult(userName);
      if (viaForm)
        return text(
          viaForm.action === 'accept' ? `Hello, ${viaForm.content.name}!` : `No name given (${viaForm.action}).`,
        );
      const viaSampling = readInputResult('capital_question');
      if (viaSampling) return text(`Sampled: ${samplingText(viaSampling) ?? '(no text)'}`);
      if (canElicit('form')) return requireInput.elicit('What is your name?', userName, { key: 'user_name' });
      if (typeof ctx.clientCapabilities.sampling === 'object' && ctx.clientCapabilities.sampling !== null) {
        return {
          resultType: 'input_required',
          inputRequests: { capital_question: samplingRequest('What is the capital of France?') },
        };
      }
      return text('This client declared neither elicitation nor sampling: nothing to ask.');
    },
  );

  tool(
    server,
    'test_input_required_result_sampling',
    {
      description: 'Conformance (SEP-2322): asks the client model a question (inputRequests.capital_question)',
      inputSchema: z.object({}),
    },
    async () => {
      const answer = readInputResult('capital_question');
      if (!answer)
        return {
          resultType: 'input_required',
          inputRequests: { capital_question: samplingRequest('What is the capital of France?') },
        } satisfies InputRequiredResult;
      return text(`The model answered: ${samplingText(answer) ?? '(no text)'}`);
    },
  );

  tool(
    server,
    'test_input_required_result_list_roots',
    {
      description: "Conformance (SEP-2322): asks for the client's roots (inputRequests.client_roots)",
      inputSchema: z.object({}),
    },
    async () => {
      const answer = readInputResult('client_roots');
      if (!answer)
        return {
          resultType: 'input_required',
          inputRequests: { client_roots: rootsRequest },
        } satisfies InputRequiredResult;
      return text(`Client roots: ${(rootUris(answer) ?? []).join(', ') || '(none)'}`);
    },
  );

  tool(
    server,
    'test_input_required_result_multiple_inputs',
    {
      description:
        'Conformance (SEP-2322): a name (elicitation), a greeting (sampling) and the roots, in one round with a requestState',
      inputSchema: z.object({}),
    },
    async () => {
      const name = readInputResult(userName);
      const greeting = readInputResult('greeting');
      const roots = readInputResult('client_roots');
      if (!name || !greeting || !roots) {
        const form = requireInput.elicit('What is your name?', userName, { key: 'user_name' });
        return {
          resultType: 'input_required',
          inputRequests: {
            ...form.inputRequests,
            greeting: samplingRequest('Write a one-line greeting.'),
            client_roots: rootsRequest,
          },
          requestState: { asked: ['user_name', 'greeting', 'client_roots'] },
        } satisfies InputRequiredResult;
      }
      const who = name.action === 'accept' ? name.content.name : '(anonymous)';
      return text(
        `name=${who}; greeting=${samplingText(greeting) ?? '(none)'}; roots=${(rootUris(roots) ?? []).join(', ')}`,
      );
    },
  );

  prompt(
    server,
    'test_input_required_result_prompt',
    { description: 'Conformance (SEP-2322): prompts/get asks for context first (inputRequests.user_context)' },
    async () => {
      const answer = readInputResult(userContext);
      if (!answer)
        return requireInput.elicit('What context should the prompt use?', userContext, { key: 'user_context' });
      const context = answer.action === 'accept' ? answer.content.context : '(none)';
      return {
        description: 'A prompt built from the context the user gave',
        messages: [
          { role: 'user' as const, content: { type: 'text' as const, text: `Using this context: ${context}` } },
        ],
      };
    },
  );
}
