import type { ConsoleSignInService } from './console-sign-in.service';

/** `console-link` (docs/operations.md#admin-cli): the code in the URL fragment, which browsers never send. */
export async function consoleLinkCommand(
  consoleSignIn: ConsoleSignInService,
  options: { org: string; email: string },
): Promise<{ url: string; expires_at: string; expires_in: number }> {
  const link = await consoleSignIn.createLink(options.org, options.email);
  return { url: link.url, expires_at: link.expiresAt.toISOString(), expires_in: link.expiresIn };
}
