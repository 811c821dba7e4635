import express, { Request, Response } from 'express';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import type { AuthInfo } from '@modelcontextprotocol/sdk/server/auth/types.js';
// From a copy outside this repository: 'Gatehouse-Verifier' and 'Gatehouse-Verifier/express'.
import { createVerifier, VerifiedAccess } from '../../../verifier/src/index';
import { gatehouse, protectedResource } from '../../../verifier/src/express';
import { DECLARED_SCOPES, notesServer, requiredScopes } from './tools';

/**
 * An MCP server protected by Gatehouse (docs/mcp.md): Streamable HTTP at the audience's path, RFC 9728 metadata, and
 * the verifier in front of every request. Configured by the environment:
 *
 * - GATEHOUSE_ISSUER: Gatehouse's issuer URL (its JWT_ISSUER).
 * - MCP_AUDIENCE: the audience it is registered with at Gatehouse, which is also its URL (e.g. http://127.0.0.1:3100/mcp).
 * - GATEHOUSE_CLIENT_ID, GATEHOUSE_CLIENT_SECRET: what `gatehouse resource-server add` printed (the revocation feed).
 * - PORT (default: the audience's), HOST (default 127.0.0.1).
 */

function required(name: string): string {
  const value = process.env[name];
  if (value === undefined || value === '') throw new Error(`${name} is required`);
  return value;
}

type VerifiedRequest = Request & { gatehouse?: VerifiedAccess; auth?: AuthInfo };

async function main(): Promise<void> {
  const issuer = required('GATEHOUSE_ISSUER');
  // Compared as written, at Gatehouse and in the verifier.
  const audienceValue = required('MCP_AUDIENCE');
  const audience = new URL(audienceValue);
  const verifier = await createVerifier({
    issuer,
    audience: audienceValue,
    clientId: required('GATEHOUSE_CLIENT_ID'),
    clientSecret: required('GATEHOUSE_CLIENT_SECRET'),
    resourceMetadata: { scopes: Object.keys(DECLARED_SCOPES), resourceName: 'Gatehouse example notes' },
  });

  const app = express();
  app.disable('x-powered-by');
  app.use(protectedResource(verifier));
  const path = audience.pathname;
  // The body is read first: the scopes a request needs depend on the tool it calls.
  app.post(
    path,
    express.json({ limit: '100kb' }),
    gatehouse<VerifiedRequest>(verifier, (req) => requiredScopes(req.body)),
    async (req: VerifiedRequest, res: Response) => {
      const access = req.gatehouse!;
      const token = req.headers.authorization!.slice('Bearer '.length).trim();
      req.auth = {
        token,
        clientId: access.apiKeyId,
        scopes: access.scopes,
        extra: { userId: access.userId, organizationId: access.organizationId },
      };
      const server = notesServer();
      // Stateless: one transport per request, no session id.
      const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined, enableJsonResponse: true });
      res.on('close', () => {
        void transport.close();
        void server.close();
      });
      await server.connect(transport);
      await transport.handleRequest(req, res, req.body);
    },
  );
  // No server-sent stream and no session to end in stateless mode.
  app.all(path, (_req, res) => {
    res.status(405).set('Allow', 'POST').json({ code: 'method_not_allowed', message: 'POST only' });
  });

  const port = Number(process.env.PORT ?? (audience.port || 3100));
  const host = process.env.HOST ?? '127.0.0.1';
  const listener = app.listen(port, host, () => {
    console.log(`listening ${JSON.stringify({ port, url: audienceValue })}`);
  });
  const stop = (): void => {
    listener.close();
    void verifier.close().then(() => process.exit(0));
  };
  process.once('SIGTERM', stop);
  process.once('SIGINT', stop);
}

main().catch((error: unknown) => {
  console.error(error instanceof Error ? error.message : error);
  process.exit(1);
});
