/**
 * The labels of audit targets that another module owns (API keys: their label), shown beside the ids in the audit log.
 * A port: api-keys provides it (docs/architecture.md#ports).
 */
export interface AuditTargetLabels {
  /** The label of each of these targets of `organizationId` (one query; unknown ids left out). */
  labels(organizationId: string, ids: readonly string[]): Promise<Map<string, string>>;
}

export const AUDIT_TARGET_LABELS = Symbol('AUDIT_TARGET_LABELS');
