/**
 * The console's names for the workload identities' types (docs/workload-identities.md), from the generated document
 * like the others (api/contract.ts): keys without secrets.
 */
import type { components } from '../../../client';

type Schemas = components['schemas'];

export type WorkloadIdentity = Schemas['WorkloadIdentityView'];
export type WorkloadIdentityStatus = WorkloadIdentity['status'];
/** A trusted issuer of kind workloads an identity may name, with the audience its tokens must carry. */
export type WorkloadIssuer = Schemas['WorkloadIssuerView'];
