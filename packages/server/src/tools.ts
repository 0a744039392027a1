/**
 * One registration per tool: `app.tool(name, config, handler)` records it once; every server the
 * preset builds (an SDK 1.x or 2.x `McpServer` per 2025-era session, an SDK 2.x one per 2026-07-28
 * request, one on stdio) gets it from here, with the same handler. The lock, job and deadline of a
 * tool are read by the stack from the same table.
 */
import type { CallContext, HandlerOutput, ToolAnnotations } from '@mcp-tether/core';
import { z } from 'zod';
import { shapeHandler, type ToolReturn } from './result.js';
import type { ToolTable } from './stack.js';

/** A zod raw shape (`{ seconds: z.number() }`), as the SDK's `inputSchema` takes it. */
export type ZodShape = Record<string, z.ZodType>;

/** The handler's arguments for an `inputSchema` (a raw shape or a `z.object(...)`). */
export type ArgsOf<S> = S extends z.ZodType
  ? z.output<S>
  : S extends ZodShape
    ? z.output<z.ZodObject<S>>
    : Record<string, never>;

/** How a tool is registered (the SDK's `registerTool` config, plus the preset's three keys). */
export interface ToolConfig<S extends ZodShape | z.ZodObject = ZodShape> {
  title?: string;
  description?: string;
  /** The arguments, validated by the SDK: a zod raw shape or a `z.object(...)`. Default: none (`{}`). */
  inputSchema?: S;
  /** The structured result's schema (not for job tools: their answer may be a job handle). */
  outputSchema?: ZodShape | z.ZodObject;
  annotations?: ToolAnnotations;
  _meta?: Record<string, unknown>;
  /**
   * The lock calls of this tool take (`@mcp-tether/mutex`, FIFO, across processes on Redis): a
   * name — tools naming the same lock exclude each other — or a function of the validated
   * arguments (`(args) => \`doc:${args.id}\``). Without it the tool takes no lock (there is no
   * default per tool name). Not for `readOnlyHint` tools.
   */
  lock?: string | ((args: ArgsOf<S>) => string);
  /**
   * Run as a job (`@mcp-tether/jobs`): an MCP task for clients that ask for one (2025-11-25
   * `params.task`, the 2026 tasks extension), else inline up to `inlineMs` and then a job handle
   * polled with `jobs.status`. `true` = `'optional'`; `'required'` refuses calls that cannot be tasks.
   */
  job?: boolean | 'optional' | 'required';
  /** This tool's deadline in ms (for a job: its inline phase). Default: the app's `timeoutMs`. */
  timeoutMs?: number;
}

/**
 * A tool handler: `(args, ctx) => result`, async or an async generator (`yield progress(...)`). It
 * may return a string or a plain object (wrapped into a `CallToolResult`, see `ToolReturn`), and
 * ask the user with `ctx.confirm(...)` / `ctx.ask(...)`.
 */
export type ToolHandler<S> = (args: ArgsOf<S>, ctx: CallContext) => HandlerOutput<ToolReturn>;

interface Entry {
  readonly name: string;
  readonly schema: z.ZodObject | undefined;
  readonly config: Record<string, unknown>;
  readonly lock: string | ((args: never) => string) | undefined;
  readonly job: 'optional' | 'required' | undefined;
  readonly timeoutMs: number | undefined;
  readonly callback: (args: unknown, ctx: CallContext) => unknown;
}

/** The part of an `McpServer` (either SDK line) used to register tools. */
interface ToolServer {
  registerTool(name: string, config: unknown, callback: unknown): unknown;
}

function isZodSchema(value: unknown): value is z.ZodType {
  return typeof value === 'object' && value !== null && '_zod' in value;
}

function toObjectSchema(schema: ZodShape | z.ZodObject | undefined, what: string): z.ZodObject | undefined {
  if (schema === undefined) return undefined;
  if (isZodSchema(schema)) {
    if (!(schema instanceof z.ZodObject) && (schema as { _zod: { def: { type?: string } } })._zod.def.type !== 'object')
      throw new TypeError(`${what} must be a zod raw shape or a z.object(...)`);
    return schema as z.ZodObject;
  }
  if (typeof schema !== 'object' || schema === null || Array.isArray(schema))
    throw new TypeError(`${what} must be a zod raw shape or a z.object(...)`);
  for (const [key, field] of Object.entries(schema))
    if (!isZodSchema(field)) throw new TypeError(`${what}.${key} is not a zod schema`);
  return z.object(schema);
}

const NAME = /^[A-Za-z0-9_.-]{1,128}$/;

/** The tools of one app. */
export class Tools implements ToolTable {
  readonly #entries = new Map<string, Entry>();

  /** Names, in registration order. */
  get names(): string[] {
    return [...this.#entries.keys()];
  }

  get hasJobs(): boolean {
    for (const e of this.#entries.values()) if (e.job) return true;
    return false;
  }

  /**
   * Record a tool.
   * @throws TypeError for a bad name, a name taken (also `jobs.status`/`jobs.cancel`), a bad schema
   *   or option, a lock on a `readOnlyHint` tool
   */
  add<S extends ZodShape | z.ZodObject>(name: string, config: ToolConfig<S>, handler: ToolHandler<S>): void {
    const who = `@mcp-tether/server: tool ${JSON.stringify(name)}`;
    if (typeof name !== 'string' || !NAME.test(name))
      throw new TypeError(`${who}: a tool name is 1 to 128 characters of A-Z a-z 0-9 _ - .`);
    if (this.#entries.has(name) || name === 'jobs.status' || name === 'jobs.cancel')
      throw new TypeError(`${who} is already registered`);
    if (typeof handler !== 'function') throw new TypeError(`${who}: the handler must be a function`);
    const { lock, job, timeoutMs, inputSchema, outputSchema, ...rest } = config ?? {};
    if (lock !== undefined && !(typeof lock === 'function' || (typeof lock === 'string' && lock !== '')))
      throw new TypeError(`${who}: lock must be a non-empty string or a function of the arguments`);
    if (lock !== undefined && rest.annotations?.readOnlyHint === true)
      throw new TypeError(`${who}: a readOnlyHint tool takes no lock (the mutex never serializes reads)`);
    if (job !== undefined && job !== true && job !== false && job !== 'optional' && job !== 'required')
      throw new TypeError(`${who}: job must be true, false, 'optional' or 'required'`);
    if (job && outputSchema !== undefined)
      throw new TypeError(`${who}: a job tool has no outputSchema (its answer may be a job handle)`);
    if (timeoutMs !== undefined && !(typeof timeoutMs === 'number' && timeoutMs > 0))
      throw new TypeError(`${who}: timeoutMs must be a positive number of ms`);
    const schema = toObjectSchema(inputSchema, `${who}: inputSchema`);
    const output = toObjectSchema(outputSchema, `${who}: outputSchema`);
    this.#entries.set(name, {
      name,
      schema,
      config: { ...rest, inputSchema: schema ?? z.object({}), ...(output && { outputSchema: output }) },
      lock: lock as Entry['lock'],
      job: job === true ? 'optional' : job || undefined,
      timeoutMs,
      callback: shapeHandler(handler as (args: unknown, ctx: CallContext) => unknown),
    });
  }

  /** Register every tool on `server` (a tethered `McpServer` of either line). */
  registerAll(server: ToolServer): void {
    for (const e of this.#entries.values()) server.registerTool(e.name, e.config, e.callback);
  }

  hasLock(name: string): boolean {
    return this.#entries.get(name)?.lock !== undefined;
  }

  lockKey(ctx: CallContext): string | undefined {
    const e = this.#entries.get(ctx.name);
    if (!e?.lock) return undefined;
    if (typeof e.lock === 'string') return e.lock;
    // The key function gets the parsed arguments (defaults applied, types narrowed). For tools/call
    // the mutex has the SDK validate them first, so a failure here is only a last guard (-32602).
    const parsed = (e.schema ?? z.object({})).safeParse(ctx.args ?? {});
    if (!parsed.success) throw new TypeError(`invalid arguments for ${e.name}: ${parsed.error.message}`);
    return (e.lock as (args: unknown) => string)(parsed.data);
  }

  job(name: string): 'optional' | 'required' | undefined {
    return this.#entries.get(name)?.job;
  }

  timeoutMs(name: string): number | undefined {
    return this.#entries.get(name)?.timeoutMs;
  }
}
