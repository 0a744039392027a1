/**
 * A tool table: tools registered once, served by every server a factory builds (issue 28).
 *
 * The SDK's `createMcpHandler` builds a server per 2026-07-28 request, and the http front a server
 * per 2025-era session; registering N tools on each costs N `registerTool` calls (the SDK's
 * registration, tether's wrapping) per request. A table registers them once, on a template server of
 * the same class (tethered with no middleware, so that each tool's callback is wrapped once), and
 * freezes them; {@link ToolTable.install} then points a server's tool registry at those frozen tools
 * in a constant number of steps, whatever their number.
 *
 * What is shared is what does not change per request: the registered tool objects (name, title,
 * description, schemas, annotations, the wrapped callback) and the SDK's per-tool JSON Schema cache.
 * Per-request state never lives there: the wrapped callback finds its call through the SDK's
 * per-request context (as on any tethered server), and everything of the connection (the handler
 * map, the client's identity and capabilities, calls in flight, cancels, progress tokens, the
 * middlewares' per-server state) stays on the server the factory built.
 *
 * A server may still register its own tools after `install()`: its registry is then copied first
 * (copy on write), so nothing it adds reaches the table or another server.
 *
 * SDK fields used (checked at `install`): `McpServer._registeredTools`, `_createRegisteredTool`,
 * `setToolRequestHandlers`, and on SDK 2.x `_toolInputSchemaJson`.
 */
import { tether } from '../tether.js';

/** What {@link toolTable} returns. */
export interface ToolTable {
  /**
   * Serve the table's tools from `server` (an `McpServer` of either SDK line, tethered or not,
   * not yet connected); returns the same server. The first install per server class builds the
   * table (runs `register` once on a template of that class); later ones take constant time.
   * @throws Error if `server` is not an SDK `McpServer`, already registers a tool of the table, or
   *   if `register` registered anything but tools (resources and prompts are registered per server)
   */
  install<S>(server: S): S;
}

/** The registry fields of either SDK line's `McpServer`. */
interface Registry {
  constructor: new (info: { name: string; version: string }) => unknown;
  _registeredTools: Record<string, object>;
  _createRegisteredTool: (...args: unknown[]) => unknown;
  setToolRequestHandlers(): void;
  /** SDK 2.x: the JSON Schema of each tool's input, filled on first use (per tool name). */
  _toolInputSchemaJson?: Record<string, unknown>;
  _registeredResources?: Record<string, unknown>;
  _registeredResourceTemplates?: Record<string, unknown>;
  _registeredPrompts?: Record<string, unknown>;
}

/** The table of one server class. */
interface Shared {
  tools: Readonly<Record<string, object>>;
  /** The SDK 2.x JSON Schema cache, shared: each entry is a pure function of a frozen tool's schema. */
  schemaJson: Record<string, unknown> | undefined;
}

const TEMPLATE_INFO = { name: 'mcp-tether-tool-table', version: '0.0.0' };

/**
 * Register tools once and serve them from many servers. `register(server)` registers them (with
 * `server.registerTool`, on either SDK line); call {@link ToolTable.install} in the factory:
 *
 * ```ts
 * const tools = toolTable((s) => {
 *   s.registerTool('add', { inputSchema: z.object({ a: z.number(), b: z.number() }) }, add);
 * });
 * createMcpHttp({ modern: () => tools.install(tether(new McpServer(info), middlewares)) });
 * ```
 *
 * The tools are frozen: `RegisteredTool.update()`, `disable()` and `remove()` on one of them throw
 * (they would change every server's tool). `register` must not depend on a request: a tool that
 * differs per principal is registered in the factory, on the server, after `install()`.
 */
export function toolTable(register: (server: any) => void): ToolTable {
  const byClass = new Map<unknown, Shared>();
  return {
    install<S>(server: S): S {
      const m = server as unknown as Registry;
      if (
        typeof m !== 'object' ||
        m === null ||
        typeof m._registeredTools !== 'object' ||
        typeof m._createRegisteredTool !== 'function' ||
        typeof m.setToolRequestHandlers !== 'function'
      )
        throw new Error(
          'mcp-tether toolTable: install() expects an McpServer of @modelcontextprotocol/sdk (^1.30) or @modelcontextprotocol/server (^2.4)',
        );
      let shared = byClass.get(m.constructor);
      if (!shared) {
        shared = build(m.constructor, register);
        byClass.set(m.constructor, shared);
      }
      share(m, shared);
      return server;
    },
  };
}

/** Run `register` on a tethered template of the class, then freeze what it registered. */
function build(Ctor: Registry['constructor'], register: (server: unknown) => void): Shared {
  const template = tether(new Ctor(TEMPLATE_INFO), []) as Registry;
  register(template);
  for (const [what, map] of [
    ['resources', template._registeredResources],
    ['resource templates', template._registeredResourceTemplates],
    ['prompts', template._registeredPrompts],
  ] as const)
    if (map && Object.keys(map).length > 0)
      throw new Error(`mcp-tether toolTable: register() added ${what}; a table shares tools only`);
  const tools = template._registeredTools;
  for (const tool of Object.values(tools)) Object.freeze(tool);
  Object.freeze(tools);
  return { tools, schemaJson: template._toolInputSchemaJson === undefined ? undefined : {} };
}

/** Point the server's registry at the table; copy it (and the schema cache) before the server adds its own. */
function share(m: Registry, shared: Shared): void {
  const own = m._registeredTools;
  for (const name in own)
    if (Object.hasOwn(shared.tools, name))
      throw new Error(`mcp-tether toolTable: tool ${name} is already registered on this server`);
  const hasOwn = Object.keys(own).length > 0;
  m._registeredTools = hasOwn ? { ...shared.tools, ...own } : shared.tools;
  if (shared.schemaJson && m._toolInputSchemaJson !== undefined && !hasOwn) m._toolInputSchemaJson = shared.schemaJson;
  if (!hasOwn) {
    const create = m._createRegisteredTool;
    // Copy on write: the first tool this server registers itself goes into its own copy.
    const copyOnWrite = function (this: Registry, ...args: unknown[]) {
      if (m._registeredTools === shared.tools) m._registeredTools = { ...shared.tools };
      if (shared.schemaJson && m._toolInputSchemaJson === shared.schemaJson)
        m._toolInputSchemaJson = { ...shared.schemaJson };
      // Unhook unless something (tether() after install) wrapped this hook in turn.
      if (m._createRegisteredTool === copyOnWrite) m._createRegisteredTool = create;
      return create.apply(m, args);
    };
    m._createRegisteredTool = copyOnWrite;
  }
  m.setToolRequestHandlers();
}
