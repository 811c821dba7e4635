import type { DynamicModule } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import { ApiKeysPortsModule } from '../../src/api-keys/api-keys.module';
import { AppModule } from '../../src/app.module';
import { SsfPortsModule } from '../../src/ssf/ssf.module';
import { WebhooksPortsModule } from '../../src/webhooks/webhooks.module';
import { WorkloadIdentitiesPortsModule } from '../../src/workload-identities/workload-identities.module';
import { createTestApp, createTestDatabase, testEnvironment } from '../support/test-app';

/**
 * Every port a lower module declares is required (docs/architecture.md#ports): an application assembled without the
 * module that provides one does not start, and says which port is missing, instead of starting and silently dropping
 * the revocation feed, the webhooks or a credential revocation.
 */
describe('ports', () => {
  const cases: Array<[string, unknown, RegExp]> = [
    ['ApiKeysPortsModule', ApiKeysPortsModule, /AUDIT_TARGET_LABELS/],
    ['SsfPortsModule', SsfPortsModule, /AUDIT_OBSERVER/],
    ['WebhooksPortsModule', WebhooksPortsModule, /AUDIT_WEBHOOK_OBSERVER/],
    ['WorkloadIdentitiesPortsModule', WorkloadIdentitiesPortsModule, /ISSUER_CREDENTIALS/],
  ];

  it.each(cases)('an application without %s fails at boot naming its port', async (_name, left, message) => {
    const database = createTestDatabase();
    const app: DynamicModule = AppModule.forRoot({ env: testEnvironment(database) });
    const without = { ...app, imports: app.imports!.filter((module) => module !== left) };
    expect(without.imports).toHaveLength(app.imports!.length - 1);
    try {
      await expect(Test.createTestingModule({ imports: [without] }).compile()).rejects.toThrow(message);
    } finally {
      await database.drop();
    }
  });

  it('the whole application starts, every port provided', async () => {
    const t = await createTestApp();
    try {
      await t.http().get('/healthz').expect(200);
    } finally {
      await t.close();
    }
  });
});
