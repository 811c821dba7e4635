import { AppError } from '../common/errors';
import { TrustedIssuerError } from '../federation/trusted-issuers.service';
import { cliMessage } from './error-wording';

describe('cliMessage', () => {
  it('words a trusted-issuer refusal from its reason and details, whatever its message says', () => {
    const reworded = 'some new wording of the service';
    expect(
      cliMessage(
        new TrustedIssuerError('issuer_client_invalid', reworded, {
          options: ['tokenEndpointAuth'],
          needs: ['clientSecret'],
        }),
      ),
    ).toBe('--token-endpoint-auth needs --client-secret');
    expect(
      cliMessage(
        new TrustedIssuerError('issuer_client_invalid', reworded, {
          options: ['kind'],
          needs: ['clientId', 'clientSecret'],
        }),
      ),
    ).toBe("--kind people needs --client-id and --client-secret (Gatehouse's client at the issuer)");
    expect(
      cliMessage(
        new TrustedIssuerError('issuer_option_not_for_kind', reworded, { options: ['emailDomains', 'jitRole'] }),
      ),
    ).toBe('--email-domain, --jit-role: only for --kind people');
    expect(
      cliMessage(
        new TrustedIssuerError('allowed_origin_invalid', reworded, {
          value: 'http://a.example',
          problem: 'is not https://',
        }),
      ),
    ).toBe('--allow-origin http://a.example is not https://');
    expect(cliMessage(new TrustedIssuerError('issuer_invalid', reworded, { problem: 'must be an absolute URL' }))).toBe(
      '--issuer must be an absolute URL',
    );
    expect(
      cliMessage(
        new TrustedIssuerError('issuer_audience_invalid', reworded, {
          options: ['audience'],
          value: 'https://x',
          problem: 'is too long',
        }),
      ),
    ).toBe('the default audience https://x is too long: give --audience');
  });

  it('adds the flag that would allow an endpoint on another origin to the message, and the command that removes the entry in the way', () => {
    const foreign = new TrustedIssuerError(
      'issuer_discovery_failed',
      'the jwks_uri https://keys.example/k is on https://keys.example',
      {
        foreignOrigin: 'https://keys.example',
      },
    );
    expect(cliMessage(foreign)).toBe(
      'the jwks_uri https://keys.example/k is on https://keys.example; if the issuer does serve it there, trust the issuer ' +
        'with --allow-origin https://keys.example',
    );
    expect(cliMessage(new TrustedIssuerError('people_issuer_exists', 'acme already has one', { id: 'i-1' }))).toBe(
      'acme already has one (trusted-issuer remove --id i-1)',
    );
  });

  it('prints the message when the details do not say, for other reasons, and for other errors', () => {
    expect(cliMessage(new TrustedIssuerError('issuer_client_invalid', 'as the service says'))).toBe(
      'as the service says',
    );
    expect(cliMessage(new TrustedIssuerError('issuer_discovery_failed', 'cannot fetch it'))).toBe('cannot fetch it');
    expect(cliMessage(new AppError('organization_not_found'))).toBe(new AppError('organization_not_found').message);
    expect(cliMessage(new Error('plain'))).toBe('plain');
    expect(cliMessage('text')).toBe('text');
  });
});
