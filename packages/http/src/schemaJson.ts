/**
 * The JSON Schema of a called tool's input, computed once per schema object instead of once per
 * 2026-07-28 request (issue 28).
 *
 * Before it dispatches a `tools/call`, the SDK 2.x `createMcpHandler` asks the request's server for
 * the tool's input schema as JSON Schema (`McpServer.toolInputSchemaJson(name)`, for the SEP-2243
 * `Mcp-Param-*` header check). The server caches it per tool name, but the server is new for every
 * request, so every request converted the schema again (zod's `toJSONSchema`). The conversion is a
 * pure function of the schema object, so the front keeps it by that object (a `WeakMap`: a schema
 * nobody holds any more goes with its entry); a factory that builds its schemas once, outside
 * (http README), converts each once. Nothing per request is kept: the key is the tool definition's
 * own schema, the value its JSON Schema.
 */

/** The part of an SDK 2.x `McpServer` read here (`toolInputSchemaJson` is the SDK's own, @internal). */
interface SchemaServer {
  toolInputSchemaJson?: (name: string) => unknown;
  _registeredTools?: Record<string, { inputSchema?: unknown; enabled?: boolean } | undefined>;
}

const converted = new WeakMap<object, unknown>();

/** Make `server.toolInputSchemaJson` answer from {@link converted} (no-op on a server without it). */
export function shareSchemaJson(server: unknown): void {
  const s = server as SchemaServer;
  const own = s.toolInputSchemaJson;
  if (typeof own !== 'function' || typeof s._registeredTools !== 'object') return;
  s.toolInputSchemaJson = function toolInputSchemaJson(name: string): unknown {
    const tool = s._registeredTools?.[name];
    const schema = tool?.enabled === true ? tool.inputSchema : undefined;
    if (typeof schema !== 'object' || schema === null) return own.call(s, name);
    if (converted.has(schema)) return converted.get(schema);
    const json = own.call(s, name);
    // undefined: the conversion failed; the SDK reports it where it always has (`tools/list`).
    if (json !== undefined) converted.set(schema, json);
    return json;
  };
}
