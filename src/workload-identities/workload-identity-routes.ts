import { credentialRoutes } from '../credentials/credential-routes';
import { WorkloadIdentityView } from './dto/workload-identity.view';
import { WorkloadIdentitiesRepository } from './workload-identities.repository';

/**
 * The routes identities share with every credential (docs/adr/0052-one-credential-core.md): /v1/workload-identities'
 * list, read and revocation, and every member's identities for admins (docs/workload-identities.md).
 */
export const WORKLOAD_IDENTITY_ROUTES = credentialRoutes({
  schema: 'WorkloadIdentity',
  tag: 'Workload identities',
  store: WorkloadIdentitiesRepository,
  view: WorkloadIdentityView,
  one: 'workload_identity',
  many: 'workload_identities',
  permissions: {
    read: 'workload_identities:read',
    revoke: 'workload_identities:revoke',
    manage: 'workload_identities:manage',
  },
  owner: {
    list: { summary: "List the caller's workload identities, newest first" },
    get: { summary: "Read one of the caller's workload identities" },
    revoke: {
      summary: 'Revoke a workload identity at once and for good (idempotent)',
      description:
        'The tokens minted through it stop working at once here, and a credential-change event tells every verifier.',
    },
    usage: {
      summary: "One of the caller's workload identities: its successful and refused uses over time",
      description: "Per minute, hour or day and per channel, as a key's (docs/api.md#usage-over-time).",
    },
  },
  organization: {
    path: 'v1/organization/workload-identities',
    controller: 'OrganizationWorkloadIdentitiesController',
    list: {
      summary: "List every member's workload identities in the caller's organization, newest first",
      description:
        "user_id or email narrows the list to one user's identities. Each carries its owner's e-mail address. Paged as GET /v1/workload-identities.",
    },
    revoke: {
      summary: "Revoke any workload identity of the caller's organization at once and for good (idempotent)",
      description: "Recorded as workload_identity.revoked with reason admin. Another organization's identity is 404.",
    },
    usage: {
      summary: "Any workload identity of the caller's organization: its uses over time",
      description: "Another organization's identity is 404.",
    },
  },
});
