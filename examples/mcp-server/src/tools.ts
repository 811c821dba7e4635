import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import * as z from 'zod';

/** The scopes this server declares at Gatehouse (`gatehouse resource-server add --scope`). */
export const DECLARED_SCOPES = {
  'tools:read': 'List and call read-only tools',
  'tools:write': 'Call tools that change notes',
} as const;

type Scope = keyof typeof DECLARED_SCOPES;

/** Every request needs `tools:read`; a tool that changes something needs `tools:write` as well. */
const TOOL_SCOPES: Record<string, readonly Scope[]> = {
  list_notes: ['tools:read'],
  add_note: ['tools:read', 'tools:write'],
};
const BASE_SCOPES: readonly Scope[] = ['tools:read'];

/** The scopes a JSON-RPC body (one message or a batch) needs: the union of its messages'. */
export function requiredScopes(body: unknown): readonly string[] {
  const messages: unknown[] = Array.isArray(body) ? body : [body];
  const needed = new Set<string>(BASE_SCOPES);
  for (const message of messages) {
    const { method, params } = (message ?? {}) as { method?: unknown; params?: { name?: unknown } };
    if (method !== 'tools/call') continue;
    // An unknown tool needs the most; the SDK answers that it does not exist.
    const scopes = typeof params?.name === 'string' ? TOOL_SCOPES[params.name] : undefined;
    for (const scope of scopes ?? Object.keys(DECLARED_SCOPES)) needed.add(scope);
  }
  return [...needed];
}

/** Notes per organization, in memory: what the tools read and write. */
const notes = new Map<string, string[]>();

function text(value: string): CallToolResult {
  return { content: [{ type: 'text', text: value }] };
}

/** The organization of the caller: the verifier put it in the request's auth (server.ts). */
function organization(extra: { authInfo?: { extra?: Record<string, unknown> } }): string {
  return String(extra.authInfo?.extra?.organizationId);
}

/** One MCP server per request (stateless Streamable HTTP): two tools, each checked before it runs (server.ts). */
export function notesServer(): McpServer {
  const server = new McpServer({ name: 'gatehouse-example-notes', version: '1.0.0' });
  server.registerTool(
    'list_notes',
    { description: "Lists the notes of the caller's organization", annotations: { readOnlyHint: true } },
    (extra) => text(JSON.stringify(notes.get(organization(extra)) ?? [])),
  );
  server.registerTool(
    'add_note',
    {
      description: "Adds a note to the caller's organization",
      inputSchema: { text: z.string().min(1).max(500) },
    },
    ({ text: note }, extra) => {
      const list = notes.get(organization(extra)) ?? [];
      list.push(note);
      notes.set(organization(extra), list);
      return text(`added note ${list.length}`);
    },
  );
  return server;
}
