import type { ConsoleSignInService } from './console-sign-in.service';

/**
 * `console-link --org NAME --email EMAIL` (docs/operations.md#admin-cli): a one-time sign-in link to
 * the web console for a member, valid 10 minutes. The code travels in the URL fragment, which
 * browsers never send to a server, so it never reaches an access log; the link itself is printed
 * once, on stdout, for the administrator to hand over.
 */
export async function consoleLinkCommand(
  consoleSignIn: ConsoleSignInService,
  options: { org: string; email: string },
): Promise<{ url: string; expires_at: string; expires_in: number }> {
  const link = await consoleSignIn.createLink(options.org, options.email);
  return { url: link.url, expires_at: link.expiresAt.toISOString(), expires_in: link.expiresIn };
}
