import { FakeDatadog } from './fake-datadog';

/**
 * `npm run fake-datadog`: the fake Datadog for local trials. Point the service at it with
 * MONITORING_API_BASE_URL=<printed url>. By default it accepts any keys and grants every permission.
 *   PORT                          listening port (default 4010; 0 picks a free one)
 *   FAKE_DD_API_KEYS              comma-separated API keys to accept (default: any)
 *   FAKE_DD_APPLICATION_KEYS      comma-separated application keys to accept (default: any)
 *   FAKE_DD_REVOKED_PERMISSIONS   comma-separated permissions to withhold, e.g. slos_read,usage_read
 *   FAKE_DD_FAIL                  path=status[*times],... e.g. /api/v1/slo=503 or /api/v1/validate=429*1
 *   FAKE_DD_DELAY_MS              path=ms,... e.g. /api/v1/monitor=8000
 */
function list(name: string): string[] {
  return (process.env[name] ?? '')
    .split(',')
    .map((item) => item.trim())
    .filter((item) => item !== '');
}

async function main(): Promise<void> {
  const fake = await FakeDatadog.start({ port: Number(process.env.PORT ?? 4010) });
  const apiKeys = list('FAKE_DD_API_KEYS');
  const applicationKeys = list('FAKE_DD_APPLICATION_KEYS');
  fake.acceptKeys({
    apiKeys: apiKeys.length > 0 ? apiKeys : undefined,
    applicationKeys: applicationKeys.length > 0 ? applicationKeys : undefined,
  });
  fake.revoke(...list('FAKE_DD_REVOKED_PERMISSIONS'));
  for (const item of list('FAKE_DD_FAIL')) {
    const match = /^(\/[^=]+)=(\d{3})(?:\*(\d+))?$/.exec(item);
    if (match === null) throw new Error(`FAKE_DD_FAIL: cannot read "${item}"`);
    fake.fail(match[1], { status: Number(match[2]), times: match[3] === undefined ? undefined : Number(match[3]) });
  }
  for (const item of list('FAKE_DD_DELAY_MS')) {
    const match = /^(\/[^=]+)=(\d+)$/.exec(item);
    if (match === null) throw new Error(`FAKE_DD_DELAY_MS: cannot read "${item}"`);
    fake.delay(match[1], Number(match[2]));
  }
  console.log(`fake Datadog listening on ${fake.url}`);
  console.log(`  MONITORING_API_BASE_URL=${fake.url}`);
  let lastLogged = 0;
  setInterval(() => {
    for (const call of fake.calls.slice(lastLogged)) console.log(`  ${call.method} ${call.path}`);
    lastLogged = fake.calls.length;
  }, 200).unref();
  const stop = (): void => void fake.close().then(() => process.exit(0));
  process.once('SIGINT', stop);
  process.once('SIGTERM', stop);
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
