import type { ApiKey, ApiKeyStatus } from '../api-key.entity';

/** SPEC.md section 2.1, without the secret. */
export class ApiKeyView {
  id: string;
  organization_id: string;
  user_id: string;
  label: string;
  status: ApiKeyStatus;
  created_at: string;
  updated_at: string;
  last_used_at: string | null;

  static from(key: ApiKey): ApiKeyView {
    return {
      id: key.id,
      organization_id: key.organizationId,
      user_id: key.userId,
      label: key.label,
      status: key.status,
      created_at: key.createdAt.toISOString(),
      updated_at: key.updatedAt.toISOString(),
      last_used_at: key.lastUsedAt === null ? null : key.lastUsedAt.toISOString(),
    };
  }
}

/** The creation record: the only one that carries `value`. */
export class CreatedApiKeyView extends ApiKeyView {
  value: string;
}

export class CreateApiKeyResponse {
  api_key: CreatedApiKeyView;
  opaque_key: string;
}

export class ApiKeyResponse {
  api_key: ApiKeyView;
}

export class ApiKeyListResponse {
  api_keys: ApiKeyView[];
  page: number;
  limit: number;
  total_count: number;
}
