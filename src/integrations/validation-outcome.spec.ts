import { OPTIONAL_PERMISSIONS, PERMISSION_NAMES, REQUIRED_PERMISSIONS } from './permission-catalogue';
import { buildOutcome, PermissionStatus, saveVerdict } from './validation-outcome';

const at = new Date('2026-01-02T03:04:05.678Z');
const all = (status: PermissionStatus): Map<string, PermissionStatus> =>
  new Map(PERMISSION_NAMES.map((name) => [name, status]));
const withStatus = (names: string[], status: PermissionStatus): Map<string, PermissionStatus> => {
  const statuses = all('Granted');
  for (const name of names) statuses.set(name, status);
  return statuses;
};

describe('validation outcome', () => {
  it('all granted: can save', () => {
    const outcome = buildOutcome('Working', all('Granted'), at);
    expect(outcome).toEqual({
      keys_status: 'Working',
      required_permissions_status: 'Granted',
      can_save: true,
      permissions: PERMISSION_NAMES.map((name) => ({
        name,
        required: REQUIRED_PERMISSIONS.includes(name),
        status: 'Granted',
      })),
      checked_at: '2026-01-02T03:04:05.678Z',
    });
    expect(saveVerdict(outcome)).toBe('allowed');
  });

  it('invalid keys: every permission and the required status Unknown, whatever was passed in', () => {
    const outcome = buildOutcome('Invalid', all('Granted'), at);
    expect(outcome.required_permissions_status).toBe('Unknown');
    expect(outcome.can_save).toBe(false);
    expect(outcome.permissions.map((p) => p.status)).toEqual(Array(14).fill('Unknown'));
    expect(saveVerdict(outcome)).toBe('keys_invalid');
  });

  it.each(REQUIRED_PERMISSIONS)('required %s missing: blocked as missing', (name) => {
    const outcome = buildOutcome('Working', withStatus([name], 'Missing'), at);
    expect(outcome.required_permissions_status).toBe('Missing');
    expect(outcome.can_save).toBe(false);
    expect(outcome.permissions.find((p) => p.name === name)!.status).toBe('Missing');
    expect(saveVerdict(outcome)).toBe('permissions_missing');
  });

  it.each(REQUIRED_PERMISSIONS)('required %s unknown: provider unavailable, not missing', (name) => {
    const outcome = buildOutcome('Working', withStatus([name], 'Unknown'), at);
    expect(outcome.required_permissions_status).toBe('Unknown');
    expect(outcome.can_save).toBe(false);
    expect(saveVerdict(outcome)).toBe('provider_unavailable');
  });

  it('missing wins over unknown among required ones', () => {
    const statuses = withStatus(['slos_read'], 'Unknown');
    statuses.set('monitors_read', 'Missing');
    const outcome = buildOutcome('Working', statuses, at);
    expect(outcome.required_permissions_status).toBe('Missing');
    expect(saveVerdict(outcome)).toBe('permissions_missing');
  });

  it.each(OPTIONAL_PERMISSIONS)('optional %s missing: still saves and is reported', (name) => {
    const outcome = buildOutcome('Working', withStatus([name], 'Missing'), at);
    expect(outcome.required_permissions_status).toBe('Granted');
    expect(outcome.can_save).toBe(true);
    expect(outcome.permissions.find((p) => p.name === name)!.status).toBe('Missing');
    expect(saveVerdict(outcome)).toBe('allowed');
  });

  it('every optional one missing or unknown: still saves', () => {
    const statuses = withStatus([...OPTIONAL_PERMISSIONS.slice(0, 4)], 'Missing');
    for (const name of OPTIONAL_PERMISSIONS.slice(4)) statuses.set(name, 'Unknown');
    const outcome = buildOutcome('Working', statuses, at);
    expect(outcome.can_save).toBe(true);
    expect(saveVerdict(outcome)).toBe('allowed');
  });

  it('a check the provider did not report on is Unknown', () => {
    const statuses = all('Granted');
    statuses.delete('metrics_read');
    const outcome = buildOutcome('Working', statuses, at);
    expect(outcome.permissions[1]).toEqual({ name: 'metrics_read', required: true, status: 'Unknown' });
    expect(saveVerdict(outcome)).toBe('provider_unavailable');
  });

  it('reports in catalogue order whatever order the statuses came in', () => {
    const reversed = new Map([...all('Granted')].reverse());
    expect(buildOutcome('Working', reversed, at).permissions.map((p) => p.name)).toEqual(PERMISSION_NAMES);
  });
});
