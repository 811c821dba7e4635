export type VerifyErrorCode = 'invalid_token' | 'revoked' | 'insufficient_scope' | 'feed_stale' | 'address_not_allowed';

/** Why `verify` refused a token. The message is safe to show to the token's holder. */
export class VerifyError extends Error {
  constructor(
    readonly code: VerifyErrorCode,
    message: string,
  ) {
    super(message);
    this.name = 'VerifyError';
  }
}

/**
 * Why `createVerifier` could not start: Gatehouse unreachable or answering an error, discovery that is not the
 * configured issuer's (pinned discovery), or credentials Gatehouse refused. Names the URL; never a secret.
 */
export class VerifierSetupError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'VerifierSetupError';
  }
}

/** Any failure of the start as a VerifierSetupError, its message kept (it names the URL). */
export function asSetupError(error: unknown): VerifierSetupError {
  if (error instanceof VerifierSetupError) return error;
  return new VerifierSetupError(error instanceof Error ? error.message : String(error), { cause: error });
}
