/**
 * Tools that ask the user mid-call, through @mcp-tether/mrtr: the handler returns "input needed",
 * the middleware asks (elicitation/create on 2025-era sessions, input_required on 2026-07-28), and
 * the handler runs again from the top with the answer. Side effects only after the answer.
 */
import { ask, readInputResult, requireInput } from '@mcp-tether/mrtr';
import { z } from 'zod';
import { formatCents, getInvoice } from '../state.js';
import { text, tool, type DemoServer } from './register.js';

/** The consent page `account.connect` sends the user to (out of band; no credentials in it). */
export const CONSENT_URL = 'https://example.com/tether-demo/consent';

const approval = { confirm: ask.boolean('Approve the refund') };

/** Register `billing.refund` and `account.connect`. */
export function registerInteractiveTools(server: DemoServer): void {
  tool(
    server,
    'billing.refund',
    {
      title: 'Refund an invoice',
      description: 'Refunds an invoice after the user confirms the amount.',
      inputSchema: z.object({ invoiceId: z.string().min(1).max(100).describe('Invoice id, e.g. INV-1001') }),
      annotations: { destructiveHint: true, idempotentHint: false },
    },
    async ({ invoiceId }) => {
      const invoice = getInvoice(invoiceId); // runs again each round: no side effect before the answer
      const amount = formatCents(invoice.amountCents);
      const answer = readInputResult(approval);
      if (!answer) {
        return requireInput.elicit(`Refund ${amount} to ${invoice.customer} for invoice ${invoice.id}?`, approval);
      }
      if (answer.action !== 'accept' || !answer.content.confirm) {
        const why =
          answer.action === 'accept' ? 'not approved' : answer.action === 'decline' ? 'declined' : 'cancelled';
        return text(`Invoice ${invoice.id}: not refunded (${why}).`);
      }
      return text(`Refunded ${amount} to ${invoice.customer} for invoice ${invoice.id}.`);
    },
  );

  tool(
    server,
    'account.connect',
    {
      title: 'Connect an account',
      description: 'Asks the user to grant access on a consent page (URL elicitation), then reports the connection.',
      inputSchema: z.object({}),
      annotations: { openWorldHint: true },
    },
    async () => {
      const consent = readInputResult('url');
      if (!consent)
        return requireInput.url('Grant tether-demo access to your Example account on the consent page.', CONSENT_URL);
      if (consent.action !== 'accept') return text(`not connected (${consent.action})`);
      return text('connected');
    },
  );
}

/** Register the elicitation fixtures of the conformance suite. */
export function registerElicitationFixtures(server: DemoServer): void {
  const profile = { username: ask.string("User's response"), email: ask.string("User's email address") };
  tool(
    server,
    'test_elicitation',
    {
      description: 'Conformance: asks the user for a username and an email',
      inputSchema: z.object({ message: z.string().describe('The message to show the user') }),
    },
    async ({ message }) => {
      const answer = readInputResult(profile);
      if (!answer) return requireInput.elicit(message, profile);
      const content = answer.action === 'accept' ? answer.content : {};
      return text(`User response: action=${answer.action}, content=${JSON.stringify(content)}`);
    },
  );

  const defaults = {
    name: ask.string('User name').default('John Doe'),
    age: ask.integer('User age').default(30),
    score: ask.number('User score').default(95.5),
    status: ask.enum(['active', 'inactive', 'pending'], 'User status').default('active'),
    verified: ask.boolean('Verification status').default(true),
  };
  tool(
    server,
    'test_elicitation_sep1034_defaults',
    { description: 'Conformance (SEP-1034): a form whose fields all have defaults', inputSchema: z.object({}) },
    async () => {
      const answer = readInputResult(defaults);
      if (!answer) return requireInput.elicit('Please review and update the form fields with defaults', defaults);
      const content = answer.action === 'accept' ? answer.content : {};
      return text(`Elicitation completed: action=${answer.action}, content=${JSON.stringify(content)}`);
    },
  );

  const enums = {
    untitledSingle: ask.enum(['option1', 'option2', 'option3'], 'Choose an option'),
    titledSingle: ask.enum(
      [
        { value: 'value1', title: 'First Option' },
        { value: 'value2', title: 'Second Option' },
        { value: 'value3', title: 'Third Option' },
      ],
      'Choose a titled option',
    ),
    legacyEnum: ask
      .enum({ opt1: 'Option One', opt2: 'Option Two', opt3: 'Option Three' }, 'Choose a legacy option')
      .legacy(),
    untitledMulti: ask.enum(['option1', 'option2', 'option3'], 'Choose several options').multiple(),
    titledMulti: ask
      .enum(
        [
          { value: 'value1', title: 'First Choice' },
          { value: 'value2', title: 'Second Choice' },
          { value: 'value3', title: 'Third Choice' },
        ],
        'Choose several titled options',
      )
      .multiple(),
  };
  tool(
    server,
    'test_elicitation_sep1330_enums',
    { description: 'Conformance (SEP-1330): the five enum shapes', inputSchema: z.object({}) },
    async () => {
      const answer = readInputResult(enums);
      if (!answer) return requireInput.elicit('Please choose from the enum fields', enums);
      const content = answer.action === 'accept' ? answer.content : {};
      return text(`Elicitation completed: action=${answer.action}, content=${JSON.stringify(content)}`);
    },
  );
}
