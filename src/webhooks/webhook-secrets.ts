import { Injectable } from '@nestjs/common';
import { InjectConfig, InjectSecrets } from '../config/config.module';
import type { AppConfiguration } from '../config/configuration';
import type { Secrets } from '../config/local-secrets';
import { CredentialCipher } from '../integrations/credential-cipher';

/**
 * Endpoint secrets at rest: sealed as provider credentials are (AES-256-GCM, INTEGRATIONS_ENCRYPTION_KEY and its
 * previous keys), bound to the endpoint's id; opened only to sign a delivery, never logged.
 */
@Injectable()
export class WebhookSecrets {
  private readonly cipher: CredentialCipher;

  constructor(@InjectConfig() config: AppConfiguration, @InjectSecrets() secrets: Secrets) {
    this.cipher = new CredentialCipher(
      { id: config.integrations.encryptionKeyId, key: secrets.integrationsEncryptionKey },
      config.integrations.previousEncryptionKeys,
      'webhooks',
    );
  }

  seal(secret: string, webhookId: string): string {
    return this.cipher.encrypt(secret, webhookId, 'secret');
  }

  open(sealed: string, webhookId: string): string {
    return this.cipher.decrypt(sealed, webhookId, 'secret');
  }
}
