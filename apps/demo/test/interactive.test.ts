/** Tools that ask the user mid-call (through @mcp-tether/mrtr), with a scripted SDK client. */
import { refusalCode } from '@mcp-tether/core';
import { connect, type TestClient } from '@mcp-tether/testing';
import { afterEach, describe, expect, it } from 'vitest';
import { createDemoApp, formatCents, getInvoice } from '../src/index.js';
import { CONSENT_URL } from '../src/tools/interactive.js';
import { textOf } from './helpers.js';

/** The form schema of an elicitation (url-mode params have none). */
const schemaOf = (params: object) => (params as { requestedSchema?: unknown }).requestedSchema;

let kit: TestClient | undefined;
afterEach(async () => {
  await kit?.close();
  kit = undefined;
});

describe('billing.refund', () => {
  it('with a declining client returns "not refunded", not an error', async () => {
    kit = await connect(createDemoApp().createServer(), { elicit: [{ action: 'decline' }] });
    const r = await kit.callTool('billing.refund', { invoiceId: 'INV-1001' });
    expect(r.isError).toBeFalsy();
    expect(textOf(r)).toContain('not refunded');
    expect(kit.elicitations).toHaveLength(1);
    const amount = formatCents(getInvoice('INV-1001').amountCents);
    expect(kit.elicitations[0]!.params.message).toContain(amount);
    expect(schemaOf(kit.elicitations[0]!.params)).toMatchObject({ properties: { confirm: { type: 'boolean' } } });
  });

  it('refunds when the user accepts and confirms', async () => {
    kit = await connect(createDemoApp().createServer(), { elicit: [{ action: 'accept', content: { confirm: true } }] });
    const r = await kit.callTool('billing.refund', { invoiceId: 'INV-1001' });
    expect(textOf(r)).toMatch(/^Refunded \$\d+\.\d\d to .+ for invoice INV-1001\.$/);
  });

  it('does not refund when the user accepts the form but answers no', async () => {
    kit = await connect(createDemoApp().createServer(), {
      elicit: [{ action: 'accept', content: { confirm: false } }],
    });
    expect(textOf(await kit.callTool('billing.refund', { invoiceId: 'INV-7' }))).toContain(
      'not refunded (not approved)',
    );
  });

  it('refuses cleanly (ELICITATION_UNSUPPORTED) when the client cannot be asked', async () => {
    kit = await connect(createDemoApp().createServer());
    const r = await kit.callTool('billing.refund', { invoiceId: 'INV-1001' });
    expect(r.isError).toBe(true);
    expect(refusalCode(r)).toBe('ELICITATION_UNSUPPORTED');
    expect(kit.wire.serverRequests('elicitation/create')).toHaveLength(0);
  });
});

describe('account.connect', () => {
  it('sends the user to the consent URL, then returns "connected"', async () => {
    kit = await connect(createDemoApp().createServer(), {
      capabilities: { elicitation: { form: {}, url: {} } },
      elicit: [{ action: 'accept' }],
    });
    expect(textOf(await kit.callTool('account.connect', {}))).toBe('connected');
    expect(kit.elicitations[0]!.params).toMatchObject({ mode: 'url', url: CONSENT_URL });
  });

  it('needs URL mode: a form-only client gets ELICITATION_UNSUPPORTED', async () => {
    kit = await connect(createDemoApp().createServer(), { elicit: [{ action: 'accept' }] });
    expect(refusalCode(await kit.callTool('account.connect', {}))).toBe('ELICITATION_UNSUPPORTED');
  });
});

describe('elicitation fixtures', () => {
  it('test_elicitation asks for username and email and echoes the answer', async () => {
    kit = await connect(createDemoApp({ conformanceFixtures: true }).createServer(), {
      elicit: [{ action: 'accept', content: { username: 'testuser', email: 'test@example.com' } }],
    });
    const r = await kit.callTool('test_elicitation', { message: 'Who are you?' });
    expect(textOf(r)).toBe('User response: action=accept, content={"username":"testuser","email":"test@example.com"}');
    expect(kit.elicitations[0]!.params).toMatchObject({
      message: 'Who are you?',
      requestedSchema: {
        properties: { username: { type: 'string' }, email: { type: 'string' } },
        required: ['username', 'email'],
      },
    });
  });

  it('test_elicitation_sep1034_defaults sends a default for every primitive type', async () => {
    kit = await connect(createDemoApp({ conformanceFixtures: true }).createServer(), {
      elicit: [
        { action: 'accept', content: { name: 'Jane', age: 40, score: 80.5, status: 'pending', verified: false } },
      ],
    });
    const r = await kit.callTool('test_elicitation_sep1034_defaults', {});
    expect(textOf(r)).toContain('action=accept');
    expect(schemaOf(kit.elicitations[0]!.params)).toEqual({
      type: 'object',
      properties: {
        name: { type: 'string', description: 'User name', default: 'John Doe' },
        age: { type: 'integer', description: 'User age', default: 30 },
        score: { type: 'number', description: 'User score', default: 95.5 },
        status: {
          type: 'string',
          description: 'User status',
          enum: ['active', 'inactive', 'pending'],
          default: 'active',
        },
        verified: { type: 'boolean', description: 'Verification status', default: true },
      },
      required: [],
    });
  });

  it('test_elicitation_sep1330_enums sends the five enum shapes and accepts the suite answer in one round', async () => {
    const answer = {
      untitledSingle: 'option1',
      titledSingle: 'value1',
      legacyEnum: 'opt1',
      untitledMulti: ['option1', 'option2'],
      titledMulti: ['value1', 'value2'],
    };
    kit = await connect(createDemoApp({ conformanceFixtures: true }).createServer(), {
      elicit: [{ action: 'accept', content: answer }],
    });
    const r = await kit.callTool('test_elicitation_sep1330_enums', {});
    expect(textOf(r)).toBe(`Elicitation completed: action=accept, content=${JSON.stringify(answer)}`);
    expect(kit.elicitations).toHaveLength(1);
    const p = (schemaOf(kit.elicitations[0]!.params) as { properties: Record<string, any> }).properties;
    expect(p.untitledSingle).toMatchObject({ type: 'string', enum: ['option1', 'option2', 'option3'] });
    expect(p.untitledSingle.oneOf).toBeUndefined();
    expect(p.titledSingle).toMatchObject({
      type: 'string',
      oneOf: [{ const: 'value1', title: 'First Option' }, { const: 'value2' }, { const: 'value3' }],
    });
    expect(p.titledSingle.enum).toBeUndefined();
    expect(p.legacyEnum).toMatchObject({
      type: 'string',
      enum: ['opt1', 'opt2', 'opt3'],
      enumNames: ['Option One', 'Option Two', 'Option Three'],
    });
    expect(p.untitledMulti).toMatchObject({
      type: 'array',
      items: { type: 'string', enum: ['option1', 'option2', 'option3'] },
    });
    expect(p.titledMulti).toMatchObject({
      type: 'array',
      items: { anyOf: [{ const: 'value1', title: 'First Choice' }, { const: 'value2' }, { const: 'value3' }] },
    });
  });
});
