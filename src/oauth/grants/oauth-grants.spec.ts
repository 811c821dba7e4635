import { ERROR_REASONS } from '../../common/error-reasons';
import { AppError } from '../../common/errors';
import type { OAuthGrant } from './oauth-grant';
import { OAUTH_GRANTS, OAuthGrants } from './oauth-grants';

describe('OAuthGrants', () => {
  // Each grant's type is a field: made without its services, which dispatching never touches.
  const grants = new OAuthGrants(
    OAUTH_GRANTS.map((Grant) => new (Grant as unknown as new (...args: unknown[]) => OAuthGrant)()),
  );

  it('refuses another grant_type with the catalogue message, which names every grant in order', () => {
    const expected = `grant_type must be one of: ${grants.types.join(', ')}`;
    expect(ERROR_REASONS.unsupported_grant_type.message).toBe(expected);
    let refused: unknown;
    try {
      grants.of('password');
    } catch (error) {
      refused = error;
    }
    expect(refused).toBeInstanceOf(AppError);
    expect(refused).toMatchObject({ reason: 'unsupported_grant_type', message: expected });
  });

  it('dispatches each type to its grant', () => {
    for (const type of grants.types) expect(grants.of(type).type).toBe(type);
  });
});
