import { gatewayContract, ORDERS, SPOOFED, startGatehouse } from '../support/gateway-contract';
import { EmulatedGateway, startEnvoy, startTraefik } from '../support/gateway-emulation';
import { documentedBlock, EchoUpstream, send, startEchoUpstream } from '../support/gateways';
import type { TestApp } from '../support/test-app';
import { parseYaml } from '../support/yaml-subset';

/**
 * Traefik's ForwardAuth and Envoy's ext_authz are not Debian packages: test/support/gateway-emulation.ts reproduces
 * them from their sources, reading the blocks of docs/resource-servers.md#traefik-reproduced-in-tests and
 * #envoy-reproduced-in-tests, and sends Gatehouse the very request each builds (Envoy: `path_prefix` followed by the
 * client's path and query). The gateway contract (test/support/gateway-contract.ts) holds for both.
 */
function documentedYaml(heading: string, gatehousePort: number, upstreamPort: number) {
  return parseYaml(
    documentedBlock(`### ${heading}`, 'yaml')
      .replaceAll('gatehouse:3000', `127.0.0.1:${gatehousePort}`)
      .replaceAll('orders-upstream:8000', `127.0.0.1:${upstreamPort}`),
  );
}

// Envoy's block has one scope for the whole listener; Traefik's protects /admin/ with api_keys:manage.
describe.each([
  ['Traefik', startTraefik, '/admin/users'],
  ['Envoy', startEnvoy, undefined],
] as const)('%s in front of an upstream (the documented configuration, reproduced)', (heading, start, managePath) => {
  let t: TestApp;
  let upstream: EchoUpstream;
  let gateway: EmulatedGateway;

  beforeAll(async () => {
    let gatehousePort: number;
    ({ t, port: gatehousePort } = await startGatehouse());
    upstream = await startEchoUpstream();
    gateway = await start(documentedYaml(heading, gatehousePort, upstream.port), upstream.port);
  });

  afterAll(async () => {
    await gateway?.close();
    await upstream?.close();
    await t?.close();
  });

  gatewayContract(() => ({ t, port: gateway.port, upstream }), {
    dropsInventedNames: true,
    caches: false,
    challengesOn403: true,
    managePath,
  });

  it('sends Gatehouse the audience and scope of the configuration, and the client path only where it is not read', async () => {
    const member = await t.user({ org: `${heading}-request`, role: 'member' });
    const token = await t.exchange((await t.createKey(member, 'exact')).value, { resource: ORDERS });
    const path = `/orders/5?audience=https://billing.example.com&scope=`;
    expect((await send(gateway.port, path, [['Authorization', `Bearer ${token}`], ...SPOOFED])).status).toBe(200);
    const sent = gateway.authRequests.at(-1)!;
    const header = (name: string) => sent.headers.filter(([key]) => key.toLowerCase() === name).map(([, v]) => v);
    expect(header('authorization')).toEqual([`Bearer ${token}`]);
    if (heading === 'Envoy') {
      // Envoy appends the client's path and query to path_prefix: after `ignored=`, which Gatehouse does not read.
      expect(sent.method).toBe('GET');
      expect(sent.path).toBe(`/v1/forward-auth?audience=${ORDERS}&scope=api_keys:read&ignored=${path}`);
    } else {
      // Traefik: the address as written, the client's path and query in X-Forwarded-Uri; only Authorization of the
      // client's own headers (authRequestHeaders).
      expect(sent).toMatchObject({ method: 'GET', path: `/v1/forward-auth?audience=${ORDERS}&scope=api_keys:read` });
      expect(header('x-forwarded-uri')).toEqual([path]);
      expect(sent.headers.map(([name]) => name).filter((name) => /gatehouse/i.test(name))).toEqual([]);
    }
  });
});
