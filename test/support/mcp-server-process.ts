import { ChildProcess, spawn } from 'node:child_process';
import { join } from 'node:path';
import { TEST_BUILD_DIR_VARIABLE } from './build-directory';
import { waitFor } from './wait';

/** What examples/mcp-server is started with (its environment: docs/mcp.md#run-the-example). */
export interface McpServerOptions {
  issuer: string;
  /** Its URL, registered as a resource server's audience. */
  audience: string;
  clientId: string;
  clientSecret: string;
}

/**
 * examples/mcp-server in a process of its own (compiled by global-setup), started as its README says: resolves once
 * it printed `listening`; {@link McpServerProcess.stop} kills it (SIGKILL) and waits for it to exit.
 */
export class McpServerProcess {
  output = '';
  private readonly exited: Promise<void>;

  private constructor(readonly child: ChildProcess) {
    child.stdout!.setEncoding('utf8').on('data', (chunk: string) => (this.output += chunk));
    child.stderr!.setEncoding('utf8').on('data', (chunk: string) => (this.output += chunk));
    this.exited = new Promise((resolve) => child.once('exit', () => resolve()));
  }

  static async start(options: McpServerOptions): Promise<McpServerProcess> {
    const buildDir = process.env[TEST_BUILD_DIR_VARIABLE];
    if (buildDir === undefined) throw new Error(`${TEST_BUILD_DIR_VARIABLE} is not set: run through Jest`);
    const child = spawn(process.execPath, [join(buildDir, 'examples', 'mcp-server', 'src', 'server.js')], {
      env: {
        PATH: process.env.PATH,
        GATEHOUSE_ISSUER: options.issuer,
        MCP_AUDIENCE: options.audience,
        GATEHOUSE_CLIENT_ID: options.clientId,
        GATEHOUSE_CLIENT_SECRET: options.clientSecret,
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const server = new McpServerProcess(child);
    await waitFor(
      'the example MCP server listening',
      () => {
        if (child.exitCode !== null) throw new Error(`the example MCP server exited:\n${server.output}`);
        return /^listening /m.test(server.output);
      },
      { timeoutMs: 20_000 },
    ).catch(async (error: Error) => {
      await server.stop();
      throw error;
    });
    return server;
  }

  async stop(): Promise<void> {
    if (this.child.exitCode === null && this.child.signalCode === null) this.child.kill('SIGKILL');
    await this.exited;
  }
}
