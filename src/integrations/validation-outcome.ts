import { PERMISSION_CATALOGUE } from './permission-catalogue';

/** docs/api.md#validation-outcome */
export type KeysStatus = 'Working' | 'Invalid';
export type PermissionStatus = 'Granted' | 'Missing' | 'Unknown';

export interface PermissionResult {
  name: string;
  required: boolean;
  status: PermissionStatus;
}

export interface ValidationOutcome {
  keys_status: KeysStatus;
  required_permissions_status: PermissionStatus;
  can_save: boolean;
  permissions: PermissionResult[];
  checked_at: string;
}

/** What a save does with an outcome (docs/integrations.md#validation, docs/api.md#notification-integration-object). */
export type SaveVerdict = 'allowed' | 'keys_invalid' | 'permissions_missing' | 'provider_unavailable';

export function requiredPermissionsStatus(permissions: readonly PermissionResult[]): PermissionStatus {
  const required = permissions.filter((p) => p.required);
  if (required.some((p) => p.status === 'Missing')) return 'Missing';
  if (required.some((p) => p.status === 'Unknown')) return 'Unknown';
  return 'Granted';
}

/** With invalid keys nothing was checked, so everything is Unknown. */
export function buildOutcome(
  keys: KeysStatus,
  statuses: ReadonlyMap<string, PermissionStatus>,
  checkedAt: Date,
): ValidationOutcome {
  const permissions = PERMISSION_CATALOGUE.map(({ name, required }): PermissionResult => ({
    name,
    required,
    status: keys === 'Working' ? (statuses.get(name) ?? 'Unknown') : 'Unknown',
  }));
  const required = keys === 'Working' ? requiredPermissionsStatus(permissions) : 'Unknown';
  return {
    keys_status: keys,
    required_permissions_status: required,
    can_save: keys === 'Working' && required === 'Granted',
    permissions,
    checked_at: checkedAt.toISOString(),
  };
}

/** Invalid keys and missing required permissions block a save; missing optional ones do not. */
export function saveVerdict(outcome: ValidationOutcome): SaveVerdict {
  if (outcome.keys_status === 'Invalid') return 'keys_invalid';
  switch (outcome.required_permissions_status) {
    case 'Missing':
      return 'permissions_missing';
    case 'Unknown':
      return 'provider_unavailable';
    case 'Granted':
      return 'allowed';
  }
}
