/* eslint-disable */
/** Internal type. DO NOT USE DIRECTLY. */
type Exact<T extends { [key: string]: unknown }> = { [K in keyof T]: T[K] };
/** Internal type. DO NOT USE DIRECTLY. */
export type Incremental<T> = T | { [P in keyof T]?: P extends ' $fragmentName' | '__typename' ? T[P] : never };
import type { DocumentTypeDecoration } from '@graphql-typed-document-node/core';
/** Which audit events to read; every criterion given must hold. */
export type AuditEventFilter = {
  /** Only events of this action, e.g. `deployment.create`. */
  action?: string | null | undefined;
  /** Only events whose actor is this user (a User id). */
  actorId?: string | number | null | undefined;
  /** Only events at or after this time. */
  since?: string | null | undefined;
  /** Only events on this object (its global id). */
  targetId?: string | number | null | undefined;
  /** Only events before this time (exclusive); after since when both are given. */
  until?: string | null | undefined;
};

/** Where a build stands. */
export type BuildStatus =
  /** Stopped: its deployment was cancelled or superseded by a newer push. */
  | 'CANCELLED'
  /** The build failed: message says why. */
  | 'FAILED'
  /** Waiting to run: for its cluster's agent, a slot on the cluster (NEBULA_BUILDS_PER_CLUSTER) or in the tenant's plan (CONCURRENT_BUILDS). */
  | 'QUEUED'
  /** Handed to the cluster's agent, building. */
  | 'RUNNING'
  /** The image was built and pushed: imageDigest names it. */
  | 'SUCCEEDED'
  /** It ran past NEBULA_BUILD_TIMEOUT (30 minutes by default). */
  | 'TIMED_OUT';

/** Whether a cluster's agent is connected, from its heartbeats. */
export type ClusterStatus =
  /** The agent's last heartbeat is recent. */
  | 'CONNECTED'
  /** No heartbeat for NEBULA_AGENT_DISCONNECTED_AFTER (60 seconds by default). */
  | 'DISCONNECTED'
  /** No agent has connected yet. */
  | 'PENDING';

/** What to deploy: an image digest built elsewhere, or (for a service built from Git) a commit to build first, or the head of its tracked branch. Exactly one. */
export type DeployInput = {
  /** `true`: build the commit the service's tracked branch points at now, read from its repository over HTTPS with the service's credential (as `git ls-remote` does). The commit is on the build. */
  branchHead?: boolean | null | undefined;
  /** Adds the deploy (of an imageDigest) to this open change set instead of making it. */
  changeSetId?: string | number | null | undefined;
  /** A full commit id (40 hex digits) of the service's repository: the deployment waits at BUILDING while it is built on the environment's cluster. */
  commit?: string | null | undefined;
  /** The environment (of the service's project) to deploy to. */
  environmentId: string | number;
  /** The image digest to release, `sha256:` and 64 hex digits. */
  imageDigest?: string | null | undefined;
  /** The service. */
  serviceId: string | number;
};

/** What a deployment's stage that cannot proceed waits for. */
export type DeploymentBlocker =
  /** A reviewer: a project manager or tenant admin other than the one who asked, for a protected environment (approveDeployment). */
  | 'APPROVAL'
  /** The build of the release's image, for a service built from Git. */
  | 'BUILD'
  /** The cluster's agent, which is not connected. */
  | 'DELIVERY'
  /** Nothing moved for NEBULA_DEPLOYMENT_STALL_AFTER: the rollout may be stuck. */
  | 'STALLED';

/** A deployment's stage: QUEUED, (BUILDING), (AWAITING_APPROVAL), DELIVERING, STARTING, PROBING, SWITCHING_TRAFFIC, RETIRING, then SUCCEEDED; or it ends FAILED, ROLLED_BACK, SUPERSEDED or CANCELLED. */
export type DeploymentStage =
  /** Waiting for a reviewer, in a protected environment, until approvalExpiresAt. */
  | 'AWAITING_APPROVAL'
  /** Waiting for its build, for a deploy of a commit. */
  | 'BUILDING'
  /** Ended: cancelled, rejected, or its approval lapsed. */
  | 'CANCELLED'
  /** Its release is in the cluster's desired state: the agent takes it from here. */
  | 'DELIVERING'
  /** Ended: the rollout failed with no earlier release to return to, or its build failed. */
  | 'FAILED'
  /** The agent waits for the new pods' readiness probes. */
  | 'PROBING'
  /** Made; the control plane moves it on. */
  | 'QUEUED'
  /** The agent removes the old release. */
  | 'RETIRING'
  /** Ended: its pods were not all ready in time; traffic never left the old release, and the new one was removed. */
  | 'ROLLED_BACK'
  /** The agent starts the new release beside the old one. */
  | 'STARTING'
  /** Ended: the release runs. */
  | 'SUCCEEDED'
  /** Ended: a newer deployment of the same service and environment took its place. */
  | 'SUPERSEDED'
  /** The agent points the Services at the new release. */
  | 'SWITCHING_TRAFFIC';

/** The `extensions.code` of an error, and the code of a user error. */
export type ErrorCode =
  /** Invalid input: a mutation's input (a user error), or an argument, a cursor, or a request over a limit (a top-level error). */
  | 'BAD_USER_INPUT'
  /** The state does not allow it: a name taken in its scope, the last admin, something that already ended, or an idempotency key in use. */
  | 'CONFLICT'
  /** The tenant's plan does not allow more of a resource, or a plan change would put the tenant over a limit. */
  | 'ENTITLEMENT_REQUIRED'
  /** The caller may see the object, but their role does not allow the action, or reading the field. */
  | 'FORBIDDEN'
  /** Something failed on the server. `extensions.requestId` matches the response's X-Request-Id header and the server's log. */
  | 'INTERNAL'
  /** The object does not exist, or the caller may not see it: both read the same. */
  | 'NOT_FOUND'
  /** Too many connections open for the token or the address (HTTP 429): retry after Retry-After. */
  | 'RATE_LIMITED'
  /** No token or session, or an unknown, expired or revoked one (HTTP 401): nothing ran. All of these read the same. */
  | 'UNAUTHENTICATED'
  /** The database (or another dependency) is unavailable for a moment: retry with backoff. The outcome of a mutation answered so is unknown unless it carried an idempotency key. */
  | 'UNAVAILABLE';

/** Where an invitation stands. */
export type InvitationStatus =
  /** The person set a passphrase through it. */
  | 'ACCEPTED'
  /** It was not used before expiresAt. */
  | 'EXPIRED'
  /** Its link works: not used, revoked or expired yet. */
  | 'OPEN'
  /** A tenant admin revoked it, or a newer invitation of the same person replaced it. */
  | 'REVOKED';

/** Which log lines to read; every criterion given must hold. */
export type LogFilter = {
  /** Lines of this deployment's release. */
  deploymentId?: string | number | null | undefined;
  /** Only lines of this pod (its name, at most 253 characters). */
  pod?: string | null | undefined;
  /** Only lines printed at or after this time. */
  since?: string | null | undefined;
  /** Only lines of this stream. */
  stream?: LogStream | null | undefined;
  /** Lines that contain this text (case-sensitive, at most 500 characters). */
  text?: string | null | undefined;
  /** Only lines printed before this time (exclusive). */
  until?: string | null | undefined;
};

/** Where a line of a service's log came from. */
export type LogStream =
  /** A line of the control plane's own: lines are missing before it (a pod gone, a log rotated, a rate cap hit). */
  | 'MARKER'
  /** The container's standard error. */
  | 'STDERR'
  /** The container's standard output. */
  | 'STDOUT';

/** A person's or integration's role in a project; each holds what the roles below it hold. */
export type ProjectRole =
  /** Changes services and deploys to unprotected environments. */
  | 'EDITOR'
  /** Manages the project, its environments and members; deploys anywhere; approves. */
  | 'PROJECT_MANAGER'
  /** Reads. */
  | 'VIEWER';

/** What an agent did with a revision. */
export type RevisionResult =
  /** It applied every object. */
  | 'APPLIED'
  /** Some objects did not apply (the outcome's errors name them). */
  | 'FAILED';

/** How a session began. */
export type SessionMethod =
  /** By setting a passphrase from an invitation link. */
  | 'INVITATION'
  /** Through the identity provider of NEBULA_OIDC_* (single sign-on). */
  | 'OIDC'
  /** With the person's email and the tenant's passphrase, at /signin. */
  | 'PASSPHRASE';

/** A person's or integration's role in a tenant. */
export type TenantRole =
  /** Manages clusters, members, the plan and reads the audit history; holds every project capability. */
  | 'ADMIN'
  /** Sees the tenant and its clusters; project access comes from project roles. */
  | 'MEMBER';

/** Whether a user is a person or an integration. */
export type UserKind =
  /** A person: signs in from a browser, and may make personal API tokens. */
  | 'HUMAN'
  /** A machine, such as CI: uses API tokens that a tenant admin (or the integration itself) creates; it cannot be invited to sign in. */
  | 'INTEGRATION';

/** Where a variable is set; the narrower scope overrides: service over environment over project. */
export type VariableScope =
  /** For every service of the project, in one environment. */
  | 'ENVIRONMENT'
  /** For every service of the project, in every environment. */
  | 'PROJECT'
  /** For one service, in every environment. */
  | 'SERVICE';

/** Whether a variable's value can be used. */
export type VariableStatus =
  /** The value is stored and usable. */
  | 'SET'
  /** A secret that does not open: sealed with a master key this control plane lacks, or tampered with. Services that need it are held. */
  | 'UNREADABLE';

export type ConsoleAccountQueryVariables = Exact<{ [key: string]: never; }>;


export type ConsoleAccountQuery = { viewer: { user: { email: string }, tenants: { nodes: Array<{ id: string, name: string }> }, sessions: { nodes: Array<{ id: string, method: SessionMethod, address: string, userAgent: string, createdAt: string, lastSeenAt: string, current: boolean, tenants: Array<{ name: string }> }>, pageInfo: { hasNextPage: boolean } } } };

export type ConsoleRevokeSessionMutationVariables = Exact<{
  id: string | number;
}>;


export type ConsoleRevokeSessionMutation = { revokeSession: { revokedSessionId: string | null, userErrors: Array<{ message: string }> } };

export type ConsoleCreateTokenMutationVariables = Exact<{
  name: string;
  tenant?: string | number | null | undefined;
  days?: number | null | undefined;
}>;


export type ConsoleCreateTokenMutation = { createApiToken: { secret: string | null, apiToken: { prefix: string, expiresAt: string | null } | null, userErrors: Array<{ message: string }> } };

export type ConsoleApprovalsQueryVariables = Exact<{ [key: string]: never; }>;


export type ConsoleApprovalsQuery = { viewer: { tenants: { nodes: Array<{ id: string, name: string, approvalQueue: { nodes: Array<{ id: string, stage: DeploymentStage, createdAt: string, approvalExpiresAt: string | null, requestedBy: { email: string } | null, release: { number: number, service: { name: string } }, environment: { name: string, project: { name: string } } }>, pageInfo: { hasNextPage: boolean } } }> } } };

export type ConsoleAuditQueryVariables = Exact<{
  tenant: string | number;
  after?: string | null | undefined;
  filter?: AuditEventFilter | null | undefined;
}>;


export type ConsoleAuditQuery = { node:
    | { name: string, auditEvents: { nodes: Array<{ id: string, action: string, targetType: string, createdAt: string, clientAddress: string, details: Record<string, unknown>, actor: { email: string } | null }>, pageInfo: { hasNextPage: boolean, endCursor: string | null } } | null }
    | Record<PropertyKey, never>
   | null };

export type ConsoleBuildQueryVariables = Exact<{
  id: string | number;
}>;


export type ConsoleBuildQuery = { node:
    | { id: string, status: BuildStatus, message: string, commit: string, branch: string, imageDigest: string, attempts: number, startedAt: string | null, finishedAt: string | null, cluster: { name: string } | null, log: { truncated: boolean } }
    | Record<PropertyKey, never>
   | null };

export type ConsoleBuildLogSubscriptionVariables = Exact<{
  id: string | number;
  after?: number | null | undefined;
}>;


export type ConsoleBuildLogSubscription = { buildLog: { number: number, at: string, text: string } };

export type ConsoleCliLoginQueryVariables = Exact<{
  code: string;
}>;


export type ConsoleCliLoginQuery = { cliLogin: { code: string, clientAddress: string, userAgent: string, createdAt: string, expiresAt: string } | null, viewer: { tenants: { nodes: Array<{ id: string, name: string }> } } };

export type ConsoleApproveCliLoginMutationVariables = Exact<{
  code: string;
  tenant: string | number;
}>;


export type ConsoleApproveCliLoginMutation = { approveCliLogin: { apiToken: { name: string, expiresAt: string | null } | null, userErrors: Array<{ message: string }> } };

export type ConsoleClusterQueryVariables = Exact<{
  id: string | number;
}>;


export type ConsoleClusterQuery = { node:
    | { id: string, name: string, status: ClusterStatus, lastHeartbeatAge: number | null, desiredRevision: number, appliedRevision: number, labels: Array<{ key: string, value: string }>, tenant: { viewerRole: TenantRole }, activeRevision: { number: number, confirmed: boolean, reportedAt: string } | null, inventory: { agentVersion: string, kubernetesVersion: string, capabilities: Array<string>, nodes: { nodes: Array<{ name: string, ready: boolean }>, pageInfo: { hasNextPage: boolean } }, workloads: { nodes: Array<{ namespace: string, name: string, replicas: number, readyReplicas: number }>, pageInfo: { hasNextPage: boolean } } } | null, install: { command: string } }
    | Record<PropertyKey, never>
   | null };

export type ConsoleClusterRevisionsQueryVariables = Exact<{
  id: string | number;
}>;


export type ConsoleClusterRevisionsQuery = { node:
    | { revisions: { nodes: Array<{ number: number, hash: string, createdAt: string, cause: { action: string, actor: { email: string } | null } | null, outcomes: Array<{ agent: string, result: RevisionResult, at: string }> }>, pageInfo: { hasNextPage: boolean } } | null }
    | Record<PropertyKey, never>
   | null };

export type ConsoleRegenerateTokenMutationVariables = Exact<{
  id: string | number;
  name: string;
}>;


export type ConsoleRegenerateTokenMutation = { regenerateConnectToken: { secret: string | null, userErrors: Array<{ message: string }> } };

export type ConsolePreviewDeployQueryVariables = Exact<{
  input: DeployInput;
}>;


export type ConsolePreviewDeployQuery = { previewDeploy: { clusters: Array<{ fromRevision: number, cluster: { name: string }, added: Array<{ kind: string, namespace: string, name: string }>, changed: Array<{ kind: string, namespace: string, name: string }>, removed: Array<{ kind: string, namespace: string, name: string }>, nowHeld: Array<{ service: string, reason: string }>, released: Array<{ service: string }> }>, userErrors: Array<{ field: Array<string> | null, message: string, code: ErrorCode }> } };

export type ConsoleDeployMutationVariables = Exact<{
  input: DeployInput;
}>;


export type ConsoleDeployMutation = { deploy: { deployment: { id: string, stage: DeploymentStage } | null, userErrors: Array<{ field: Array<string> | null, message: string, code: ErrorCode }> } };

export type ConsoleApproveMutationVariables = Exact<{
  id: string | number;
}>;


export type ConsoleApproveMutation = { approveDeployment: { deployment: { id: string, stage: DeploymentStage } | null, userErrors: Array<{ message: string }> } };

export type ConsoleRejectMutationVariables = Exact<{
  id: string | number;
}>;


export type ConsoleRejectMutation = { rejectDeployment: { deployment: { id: string, stage: DeploymentStage } | null, userErrors: Array<{ message: string }> } };

export type ConsoleCancelMutationVariables = Exact<{
  id: string | number;
}>;


export type ConsoleCancelMutation = { cancelDeployment: { deployment: { id: string, stage: DeploymentStage } | null, userErrors: Array<{ message: string }> } };

export type ConsoleRedeployMutationVariables = Exact<{
  id: string | number;
}>;


export type ConsoleRedeployMutation = { redeploy: { deployment: { id: string } | null, userErrors: Array<{ message: string }> } };

export type ConsoleDeploymentQueryVariables = Exact<{
  id: string | number;
}>;


export type ConsoleDeploymentQuery = { node:
    | { id: string, stage: DeploymentStage, blocker: DeploymentBlocker | null, message: string, createdAt: string, approvalExpiresAt: string | null, requestedBy: { email: string } | null, release: { number: number, imageDigest: string, service: { id: string, name: string } }, build: { id: string } | null, environment: { id: string, name: string, protected: boolean, project: { name: string, viewerRole: ProjectRole, tenant: { viewerRole: TenantRole } } }, cluster: { id: string, name: string } }
    | Record<PropertyKey, never>
   | null };

export type DeploymentEventsSubscriptionVariables = Exact<{
  id: string | number;
  after?: string | null | undefined;
}>;


export type DeploymentEventsSubscription = { deploymentEvents: { cursor: string, sequence: number, stage: DeploymentStage, blocker: DeploymentBlocker | null, message: string, at: string } };

export type ConsoleEnvironmentQueryVariables = Exact<{
  id: string | number;
}>;


export type ConsoleEnvironmentQuery = { node:
    | { id: string, name: string, protected: boolean, clusterSelector: Array<{ key: string, value: string }>, namespaceSelector: Array<{ key: string, value: string }>, placement: { namespace: string | null, problem: string | null, cluster: { id: string, name: string } | null }, eligibleClusters: { nodes: Array<{ name: string }> }, variables: Array<{ id: string, name: string, scope: VariableScope, secret: boolean, value: string | null, status: VariableStatus, statusReason: string | null }>, project: { name: string, viewerRole: ProjectRole, tenant: { viewerRole: TenantRole }, services: { nodes: Array<{ id: string, name: string, releases: { nodes: Array<{ number: number, imageDigest: string, createdAt: string }> } }> } }, deployments: { nodes: Array<{ id: string, stage: DeploymentStage, createdAt: string, release: { number: number, service: { name: string } } }> } }
    | Record<PropertyKey, never>
   | null };

export type ConsoleRollbackMutationVariables = Exact<{
  service: string | number;
  env: string | number;
  number: number;
}>;


export type ConsoleRollbackMutation = { rollback: { deployment: { id: string } | null, userErrors: Array<{ message: string }> } };

export type ConsoleLogsQueryVariables = Exact<{
  service: string | number;
  env: string | number;
  filter?: LogFilter | null | undefined;
}>;


export type ConsoleLogsQuery = { node:
    | { name: string, logs: { nodes: Array<{ number: number, at: string, stream: LogStream, text: string, pod: string }> } }
    | Record<PropertyKey, never>
   | null };

export type ConsoleLogTailSubscriptionVariables = Exact<{
  service: string | number;
  env: string | number;
  after?: number | null | undefined;
  filter?: LogFilter | null | undefined;
}>;


export type ConsoleLogTailSubscription = { serviceLogs: { number: number, at: string, stream: LogStream, text: string, pod: string } };

export type ConsoleClusterRowFragment = { id: string, name: string, status: ClusterStatus, lastHeartbeatAge: number | null, desiredRevision: number, appliedRevision: number, activeRevision: { number: number, confirmed: boolean } | null };

export type ConsoleProjectCardFragment = { id: string, name: string, viewerRole: ProjectRole, services: { nodes: Array<{ id: string, name: string, git: { branch: string } | null }> }, environments: { nodes: Array<{ id: string, name: string, protected: boolean, deployments: { nodes: Array<{ id: string, stage: DeploymentStage, createdAt: string, release: { number: number, service: { name: string } } }> } }>, pageInfo: { hasNextPage: boolean } } };

export type ConsoleTenantSectionFragment = { id: string, name: string, viewerRole: TenantRole, clusters: { nodes: Array<{ id: string, name: string, status: ClusterStatus, lastHeartbeatAge: number | null, desiredRevision: number, appliedRevision: number, activeRevision: { number: number, confirmed: boolean } | null }>, pageInfo: { hasNextPage: boolean, endCursor: string | null } }, projects: { nodes: Array<{ id: string, name: string, viewerRole: ProjectRole, services: { nodes: Array<{ id: string, name: string, git: { branch: string } | null }> }, environments: { nodes: Array<{ id: string, name: string, protected: boolean, deployments: { nodes: Array<{ id: string, stage: DeploymentStage, createdAt: string, release: { number: number, service: { name: string } } }> } }>, pageInfo: { hasNextPage: boolean } } }>, pageInfo: { hasNextPage: boolean, endCursor: string | null } } };

export type ConsoleOverviewQueryVariables = Exact<{
  after?: string | null | undefined;
}>;


export type ConsoleOverviewQuery = { viewer: { user: { email: string, name: string }, tenants: { nodes: Array<{ id: string, name: string, viewerRole: TenantRole, clusters: { nodes: Array<{ id: string, name: string, status: ClusterStatus, lastHeartbeatAge: number | null, desiredRevision: number, appliedRevision: number, activeRevision: { number: number, confirmed: boolean } | null }>, pageInfo: { hasNextPage: boolean, endCursor: string | null } }, projects: { nodes: Array<{ id: string, name: string, viewerRole: ProjectRole, services: { nodes: Array<{ id: string, name: string, git: { branch: string } | null }> }, environments: { nodes: Array<{ id: string, name: string, protected: boolean, deployments: { nodes: Array<{ id: string, stage: DeploymentStage, createdAt: string, release: { number: number, service: { name: string } } }> } }>, pageInfo: { hasNextPage: boolean } } }>, pageInfo: { hasNextPage: boolean, endCursor: string | null } } }>, pageInfo: { hasNextPage: boolean, endCursor: string | null } } } };

export type ConsoleMoreClustersQueryVariables = Exact<{
  tenant: string | number;
  after?: string | null | undefined;
}>;


export type ConsoleMoreClustersQuery = { node:
    | { clusters: { nodes: Array<{ id: string, name: string, status: ClusterStatus, lastHeartbeatAge: number | null, desiredRevision: number, appliedRevision: number, activeRevision: { number: number, confirmed: boolean } | null }>, pageInfo: { hasNextPage: boolean, endCursor: string | null } } }
    | Record<PropertyKey, never>
   | null };

export type ConsoleMoreProjectsQueryVariables = Exact<{
  tenant: string | number;
  after?: string | null | undefined;
}>;


export type ConsoleMoreProjectsQuery = { node:
    | { projects: { nodes: Array<{ id: string, name: string, viewerRole: ProjectRole, services: { nodes: Array<{ id: string, name: string, git: { branch: string } | null }> }, environments: { nodes: Array<{ id: string, name: string, protected: boolean, deployments: { nodes: Array<{ id: string, stage: DeploymentStage, createdAt: string, release: { number: number, service: { name: string } } }> } }>, pageInfo: { hasNextPage: boolean } } }>, pageInfo: { hasNextPage: boolean, endCursor: string | null } } }
    | Record<PropertyKey, never>
   | null };

export type ConsolePeopleQueryVariables = Exact<{
  tenant: string | number;
}>;


export type ConsolePeopleQuery = { node:
    | { id: string, name: string, members: { nodes: Array<{ id: string, role: TenantRole, user: { email: string, name: string, kind: UserKind } }> }, invitations: { nodes: Array<{ id: string, email: string, status: InvitationStatus, expiresAt: string }> } | null }
    | Record<PropertyKey, never>
   | null };

export type ConsoleInviteMutationVariables = Exact<{
  tenant: string | number;
  email: string;
  name: string;
  role?: TenantRole | null | undefined;
}>;


export type ConsoleInviteMutation = { inviteMember: { link: string | null, userErrors: Array<{ message: string }> } };

export type ConsoleRevokeInvitationMutationVariables = Exact<{
  id: string | number;
}>;


export type ConsoleRevokeInvitationMutation = { revokeInvitation: { invitation: { id: string, status: InvitationStatus } | null, userErrors: Array<{ message: string }> } };

export type ConsoleAdminTenantsQueryVariables = Exact<{ [key: string]: never; }>;


export type ConsoleAdminTenantsQuery = { viewer: { tenants: { nodes: Array<{ id: string, name: string, viewerRole: TenantRole }> } } };

export class TypedDocumentString<TResult, TVariables>
  extends String
  implements DocumentTypeDecoration<TResult, TVariables>
{
  __apiType?: NonNullable<DocumentTypeDecoration<TResult, TVariables>['__apiType']>;
  private value: string;
  public __meta__?: Record<string, any> | undefined;

  constructor(value: string, __meta__?: Record<string, any> | undefined) {
    super(value);
    this.value = value;
    this.__meta__ = __meta__;
  }

  override toString(): string & DocumentTypeDecoration<TResult, TVariables> {
    return this.value;
  }
}
export const ConsoleClusterRowFragmentDoc = new TypedDocumentString(`
    fragment ConsoleClusterRow on Cluster {
  id
  name
  status
  lastHeartbeatAge
  desiredRevision
  appliedRevision
  activeRevision {
    number
    confirmed
  }
}
    `, {"fragmentName":"ConsoleClusterRow"}) as unknown as TypedDocumentString<ConsoleClusterRowFragment, unknown>;
export const ConsoleProjectCardFragmentDoc = new TypedDocumentString(`
    fragment ConsoleProjectCard on Project {
  id
  name
  viewerRole
  services(first: 20) {
    nodes {
      id
      name
      git {
        branch
      }
    }
  }
  environments(first: 10) {
    nodes {
      id
      name
      protected
      deployments(first: 3) {
        nodes {
          id
          stage
          createdAt
          release {
            number
            service {
              name
            }
          }
        }
      }
    }
    pageInfo {
      hasNextPage
    }
  }
}
    `, {"fragmentName":"ConsoleProjectCard"}) as unknown as TypedDocumentString<ConsoleProjectCardFragment, unknown>;
export const ConsoleTenantSectionFragmentDoc = new TypedDocumentString(`
    fragment ConsoleTenantSection on Tenant {
  id
  name
  viewerRole
  clusters(first: 25) {
    nodes {
      ...ConsoleClusterRow
    }
    pageInfo {
      hasNextPage
      endCursor
    }
  }
  projects(first: 10) {
    nodes {
      ...ConsoleProjectCard
    }
    pageInfo {
      hasNextPage
      endCursor
    }
  }
}
    fragment ConsoleClusterRow on Cluster {
  id
  name
  status
  lastHeartbeatAge
  desiredRevision
  appliedRevision
  activeRevision {
    number
    confirmed
  }
}
fragment ConsoleProjectCard on Project {
  id
  name
  viewerRole
  services(first: 20) {
    nodes {
      id
      name
      git {
        branch
      }
    }
  }
  environments(first: 10) {
    nodes {
      id
      name
      protected
      deployments(first: 3) {
        nodes {
          id
          stage
          createdAt
          release {
            number
            service {
              name
            }
          }
        }
      }
    }
    pageInfo {
      hasNextPage
    }
  }
}`, {"fragmentName":"ConsoleTenantSection"}) as unknown as TypedDocumentString<ConsoleTenantSectionFragment, unknown>;
export const ConsoleAccountDocument = new TypedDocumentString(`
    query ConsoleAccount {
  viewer {
    user {
      email
    }
    tenants(first: 5) {
      nodes {
        id
        name
      }
    }
    sessions(first: 100) {
      nodes {
        id
        method
        address
        userAgent
        createdAt
        lastSeenAt
        current
        tenants {
          name
        }
      }
      pageInfo {
        hasNextPage
      }
    }
  }
}
    `, {"hash":"sha256:65ac1ce6dbdc82d2fe47372c10e84507e4126c35526237fc321e397a526af000"}) as unknown as TypedDocumentString<ConsoleAccountQuery, ConsoleAccountQueryVariables>;
export const ConsoleRevokeSessionDocument = new TypedDocumentString(`
    mutation ConsoleRevokeSession($id: ID!) {
  revokeSession(input: {sessionId: $id}) {
    revokedSessionId
    userErrors {
      message
    }
  }
}
    `, {"hash":"sha256:a465cb30d27ba71cf121f615ad873bb8de1fb058e604b7c806e016a135364548"}) as unknown as TypedDocumentString<ConsoleRevokeSessionMutation, ConsoleRevokeSessionMutationVariables>;
export const ConsoleCreateTokenDocument = new TypedDocumentString(`
    mutation ConsoleCreateToken($name: String!, $tenant: ID, $days: Int) {
  createApiToken(input: {name: $name, tenantId: $tenant, expiresInDays: $days}) {
    secret
    apiToken {
      prefix
      expiresAt
    }
    userErrors {
      message
    }
  }
}
    `, {"hash":"sha256:056ae922731f13641d781f122acf1954de23070f55585ab2a0fb328c113f44b5"}) as unknown as TypedDocumentString<ConsoleCreateTokenMutation, ConsoleCreateTokenMutationVariables>;
export const ConsoleApprovalsDocument = new TypedDocumentString(`
    query ConsoleApprovals {
  viewer {
    tenants(first: 5) {
      nodes {
        id
        name
        approvalQueue(first: 50) {
          nodes {
            id
            stage
            createdAt
            approvalExpiresAt
            requestedBy {
              email
            }
            release {
              number
              service {
                name
              }
            }
            environment {
              name
              project {
                name
              }
            }
          }
          pageInfo {
            hasNextPage
          }
        }
      }
    }
  }
}
    `, {"hash":"sha256:d99c0e6b70c8fa6c0fb432ef64160c77f9540ff039a6b6a34fe2124ac7fb2873"}) as unknown as TypedDocumentString<ConsoleApprovalsQuery, ConsoleApprovalsQueryVariables>;
export const ConsoleAuditDocument = new TypedDocumentString(`
    query ConsoleAudit($tenant: ID!, $after: String, $filter: AuditEventFilter) {
  node(id: $tenant) {
    ... on Tenant {
      name
      auditEvents(first: 25, after: $after, filter: $filter) {
        nodes {
          id
          action
          targetType
          createdAt
          clientAddress
          actor {
            email
          }
          details
        }
        pageInfo {
          hasNextPage
          endCursor
        }
      }
    }
  }
}
    `, {"hash":"sha256:06db8f7e9c69bb87fa0d1c3eda33135fae5385f47ace77f138b2b6c4e9bdbd7b"}) as unknown as TypedDocumentString<ConsoleAuditQuery, ConsoleAuditQueryVariables>;
export const ConsoleBuildDocument = new TypedDocumentString(`
    query ConsoleBuild($id: ID!) {
  node(id: $id) {
    ... on Build {
      id
      status
      message
      commit
      branch
      imageDigest
      attempts
      startedAt
      finishedAt
      cluster {
        name
      }
      log(first: 1) {
        truncated
      }
    }
  }
}
    `, {"hash":"sha256:010ca3c4f25bedac3612cddf0df0e8a280c8a3cb51e696816d4d241db7737b12"}) as unknown as TypedDocumentString<ConsoleBuildQuery, ConsoleBuildQueryVariables>;
export const ConsoleBuildLogDocument = new TypedDocumentString(`
    subscription ConsoleBuildLog($id: ID!, $after: Int) {
  buildLog(buildId: $id, after: $after) {
    number
    at
    text
  }
}
    `, {"hash":"sha256:fb6bea2210584c169c1af85cc73fa8b54313a053399457a3b7846ed8e5ad002a"}) as unknown as TypedDocumentString<ConsoleBuildLogSubscription, ConsoleBuildLogSubscriptionVariables>;
export const ConsoleCliLoginDocument = new TypedDocumentString(`
    query ConsoleCliLogin($code: String!) {
  cliLogin(code: $code) {
    code
    clientAddress
    userAgent
    createdAt
    expiresAt
  }
  viewer {
    tenants(first: 20) {
      nodes {
        id
        name
      }
    }
  }
}
    `, {"hash":"sha256:6998a3d218fa63828e934c109f8e486a52704cce5f31c8b506c00048b6e415f5"}) as unknown as TypedDocumentString<ConsoleCliLoginQuery, ConsoleCliLoginQueryVariables>;
export const ConsoleApproveCliLoginDocument = new TypedDocumentString(`
    mutation ConsoleApproveCliLogin($code: String!, $tenant: ID!) {
  approveCliLogin(input: {code: $code, tenantId: $tenant}) {
    apiToken {
      name
      expiresAt
    }
    userErrors {
      message
    }
  }
}
    `, {"hash":"sha256:007931239d8a927e8c50b226ee0743b8ea120ccd99ef3c6f059b299e9e9a499a"}) as unknown as TypedDocumentString<ConsoleApproveCliLoginMutation, ConsoleApproveCliLoginMutationVariables>;
export const ConsoleClusterDocument = new TypedDocumentString(`
    query ConsoleCluster($id: ID!) {
  node(id: $id) {
    ... on Cluster {
      id
      name
      status
      lastHeartbeatAge
      desiredRevision
      appliedRevision
      labels {
        key
        value
      }
      tenant {
        viewerRole
      }
      activeRevision {
        number
        confirmed
        reportedAt
      }
      inventory {
        agentVersion
        kubernetesVersion
        capabilities
        nodes(first: 100) {
          nodes {
            name
            ready
          }
          pageInfo {
            hasNextPage
          }
        }
        workloads(first: 100) {
          nodes {
            namespace
            name
            replicas
            readyReplicas
          }
          pageInfo {
            hasNextPage
          }
        }
      }
      install {
        command
      }
    }
  }
}
    `, {"hash":"sha256:33dc2f717b198a3df5ce93b4985a909acf82556cab5fec371619af5ee8268d08"}) as unknown as TypedDocumentString<ConsoleClusterQuery, ConsoleClusterQueryVariables>;
export const ConsoleClusterRevisionsDocument = new TypedDocumentString(`
    query ConsoleClusterRevisions($id: ID!) {
  node(id: $id) {
    ... on Cluster {
      revisions(first: 10) {
        nodes {
          number
          hash
          createdAt
          cause {
            action
            actor {
              email
            }
          }
          outcomes {
            agent
            result
            at
          }
        }
        pageInfo {
          hasNextPage
        }
      }
    }
  }
}
    `, {"hash":"sha256:5c4598402aa68fc16ba66ab3f80b10a9ca1a96905c7436d9fed9bf4046547323"}) as unknown as TypedDocumentString<ConsoleClusterRevisionsQuery, ConsoleClusterRevisionsQueryVariables>;
export const ConsoleRegenerateTokenDocument = new TypedDocumentString(`
    mutation ConsoleRegenerateToken($id: ID!, $name: String!) {
  regenerateConnectToken(input: {clusterId: $id, confirmName: $name}) {
    secret
    userErrors {
      message
    }
  }
}
    `, {"hash":"sha256:c2027ebc61d6dc4aabfa7feb832e9570d0c1c8079d1872cf3cca74bf4185583c"}) as unknown as TypedDocumentString<ConsoleRegenerateTokenMutation, ConsoleRegenerateTokenMutationVariables>;
export const ConsolePreviewDeployDocument = new TypedDocumentString(`
    query ConsolePreviewDeploy($input: DeployInput!) {
  previewDeploy(input: $input) {
    clusters {
      cluster {
        name
      }
      fromRevision
      added {
        kind
        namespace
        name
      }
      changed {
        kind
        namespace
        name
      }
      removed {
        kind
        namespace
        name
      }
      nowHeld {
        service
        reason
      }
      released {
        service
      }
    }
    userErrors {
      field
      message
      code
    }
  }
}
    `, {"hash":"sha256:9cf2e9b5eb6808a659c2f40c0bdf9fe7ad5d9bc5d13e1aba7114081f686b1160"}) as unknown as TypedDocumentString<ConsolePreviewDeployQuery, ConsolePreviewDeployQueryVariables>;
export const ConsoleDeployDocument = new TypedDocumentString(`
    mutation ConsoleDeploy($input: DeployInput!) {
  deploy(input: $input) {
    deployment {
      id
      stage
    }
    userErrors {
      field
      message
      code
    }
  }
}
    `, {"hash":"sha256:3ca9e7e502b86e7fc9218495f6fba0a258ca2fbd23f32dcc1448cbc83adee648"}) as unknown as TypedDocumentString<ConsoleDeployMutation, ConsoleDeployMutationVariables>;
export const ConsoleApproveDocument = new TypedDocumentString(`
    mutation ConsoleApprove($id: ID!) {
  approveDeployment(input: {deploymentId: $id}) {
    deployment {
      id
      stage
    }
    userErrors {
      message
    }
  }
}
    `, {"hash":"sha256:2a9457114e821ab8f2eb05ec3409c8674411626206a476bbe3f4f3cc321a461d"}) as unknown as TypedDocumentString<ConsoleApproveMutation, ConsoleApproveMutationVariables>;
export const ConsoleRejectDocument = new TypedDocumentString(`
    mutation ConsoleReject($id: ID!) {
  rejectDeployment(input: {deploymentId: $id}) {
    deployment {
      id
      stage
    }
    userErrors {
      message
    }
  }
}
    `, {"hash":"sha256:fc5ba373ecf3a0e4675eaa24b8085168f52bb62c0b0c7713cb2fca68e6cd14ce"}) as unknown as TypedDocumentString<ConsoleRejectMutation, ConsoleRejectMutationVariables>;
export const ConsoleCancelDocument = new TypedDocumentString(`
    mutation ConsoleCancel($id: ID!) {
  cancelDeployment(
    input: {deploymentId: $id, reason: "cancelled from the console"}
  ) {
    deployment {
      id
      stage
    }
    userErrors {
      message
    }
  }
}
    `, {"hash":"sha256:9966ffc1243bd31623191c6a4cac907bbe55f6c1bfe662e71accec27d2fb33cd"}) as unknown as TypedDocumentString<ConsoleCancelMutation, ConsoleCancelMutationVariables>;
export const ConsoleRedeployDocument = new TypedDocumentString(`
    mutation ConsoleRedeploy($id: ID!) {
  redeploy(input: {deploymentId: $id}) {
    deployment {
      id
    }
    userErrors {
      message
    }
  }
}
    `, {"hash":"sha256:cd99bb9117fc5d24ccedd54efda790f04731981061a4cbe7f3089a638d03aa9b"}) as unknown as TypedDocumentString<ConsoleRedeployMutation, ConsoleRedeployMutationVariables>;
export const ConsoleDeploymentDocument = new TypedDocumentString(`
    query ConsoleDeployment($id: ID!) {
  node(id: $id) {
    ... on Deployment {
      id
      stage
      blocker
      message
      createdAt
      approvalExpiresAt
      requestedBy {
        email
      }
      release {
        number
        imageDigest
        service {
          id
          name
        }
      }
      build {
        id
      }
      environment {
        id
        name
        protected
        project {
          name
          viewerRole
          tenant {
            viewerRole
          }
        }
      }
      cluster {
        id
        name
      }
    }
  }
}
    `, {"hash":"sha256:60202c1bd22d6ae4eae0b70817feed12ef2341c694d60f5998ed535cd9b7fea4"}) as unknown as TypedDocumentString<ConsoleDeploymentQuery, ConsoleDeploymentQueryVariables>;
export const DeploymentEventsDocument = new TypedDocumentString(`
    subscription DeploymentEvents($id: ID!, $after: String) {
  deploymentEvents(deploymentId: $id, after: $after) {
    cursor
    sequence
    stage
    blocker
    message
    at
  }
}
    `, {"hash":"sha256:a8cbdad7035c151810422902e132231d52dbbcbca8f7d34fbef55b4e3b22a688"}) as unknown as TypedDocumentString<DeploymentEventsSubscription, DeploymentEventsSubscriptionVariables>;
export const ConsoleEnvironmentDocument = new TypedDocumentString(`
    query ConsoleEnvironment($id: ID!) {
  node(id: $id) {
    ... on Environment {
      id
      name
      protected
      clusterSelector {
        key
        value
      }
      namespaceSelector {
        key
        value
      }
      placement {
        cluster {
          id
          name
        }
        namespace
        problem
      }
      eligibleClusters(first: 10) {
        nodes {
          name
        }
      }
      variables {
        id
        name
        scope
        secret
        value
        status
        statusReason
      }
      project {
        name
        viewerRole
        tenant {
          viewerRole
        }
        services(first: 20) {
          nodes {
            id
            name
            releases(first: 5, environmentId: $id) {
              nodes {
                number
                imageDigest
                createdAt
              }
            }
          }
        }
      }
      deployments(first: 10) {
        nodes {
          id
          stage
          createdAt
          release {
            number
            service {
              name
            }
          }
        }
      }
    }
  }
}
    `, {"hash":"sha256:815d537e4af4d6ac03492571a2a1fa2cb170c8320fe1dcf6d7b288920579ba68"}) as unknown as TypedDocumentString<ConsoleEnvironmentQuery, ConsoleEnvironmentQueryVariables>;
export const ConsoleRollbackDocument = new TypedDocumentString(`
    mutation ConsoleRollback($service: ID!, $env: ID!, $number: Int!) {
  rollback(
    input: {serviceId: $service, environmentId: $env, releaseNumber: $number}
  ) {
    deployment {
      id
    }
    userErrors {
      message
    }
  }
}
    `, {"hash":"sha256:528bef26b8dc4e927d3195ada7decd315acb17f13c3aaaeaaa20b5c3a819f5c0"}) as unknown as TypedDocumentString<ConsoleRollbackMutation, ConsoleRollbackMutationVariables>;
export const ConsoleLogsDocument = new TypedDocumentString(`
    query ConsoleLogs($service: ID!, $env: ID!, $filter: LogFilter) {
  node(id: $service) {
    ... on Service {
      name
      logs(environmentId: $env, filter: $filter, last: 200) {
        nodes {
          number
          at
          stream
          text
          pod
        }
      }
    }
  }
}
    `, {"hash":"sha256:60588f64c0a3bbb903e10431355891159f4719c84e36231d43c496ad20eb652d"}) as unknown as TypedDocumentString<ConsoleLogsQuery, ConsoleLogsQueryVariables>;
export const ConsoleLogTailDocument = new TypedDocumentString(`
    subscription ConsoleLogTail($service: ID!, $env: ID!, $after: Int, $filter: LogFilter) {
  serviceLogs(
    serviceId: $service
    environmentId: $env
    after: $after
    filter: $filter
  ) {
    number
    at
    stream
    text
    pod
  }
}
    `, {"hash":"sha256:6b6cce8c59cdd890d19b2c67b50e40c1b0379930687c289345fae3bbdbe1ffd3"}) as unknown as TypedDocumentString<ConsoleLogTailSubscription, ConsoleLogTailSubscriptionVariables>;
export const ConsoleOverviewDocument = new TypedDocumentString(`
    query ConsoleOverview($after: String) {
  viewer {
    user {
      email
      name
    }
    tenants(first: 5, after: $after) {
      nodes {
        ...ConsoleTenantSection
      }
      pageInfo {
        hasNextPage
        endCursor
      }
    }
  }
}
    fragment ConsoleClusterRow on Cluster {
  id
  name
  status
  lastHeartbeatAge
  desiredRevision
  appliedRevision
  activeRevision {
    number
    confirmed
  }
}
fragment ConsoleProjectCard on Project {
  id
  name
  viewerRole
  services(first: 20) {
    nodes {
      id
      name
      git {
        branch
      }
    }
  }
  environments(first: 10) {
    nodes {
      id
      name
      protected
      deployments(first: 3) {
        nodes {
          id
          stage
          createdAt
          release {
            number
            service {
              name
            }
          }
        }
      }
    }
    pageInfo {
      hasNextPage
    }
  }
}
fragment ConsoleTenantSection on Tenant {
  id
  name
  viewerRole
  clusters(first: 25) {
    nodes {
      ...ConsoleClusterRow
    }
    pageInfo {
      hasNextPage
      endCursor
    }
  }
  projects(first: 10) {
    nodes {
      ...ConsoleProjectCard
    }
    pageInfo {
      hasNextPage
      endCursor
    }
  }
}`, {"hash":"sha256:2e10847856eed4d587b98e87a99b580ba2936a623514524facdc2ec39ad773d1"}) as unknown as TypedDocumentString<ConsoleOverviewQuery, ConsoleOverviewQueryVariables>;
export const ConsoleMoreClustersDocument = new TypedDocumentString(`
    query ConsoleMoreClusters($tenant: ID!, $after: String) {
  node(id: $tenant) {
    ... on Tenant {
      clusters(first: 25, after: $after) {
        nodes {
          ...ConsoleClusterRow
        }
        pageInfo {
          hasNextPage
          endCursor
        }
      }
    }
  }
}
    fragment ConsoleClusterRow on Cluster {
  id
  name
  status
  lastHeartbeatAge
  desiredRevision
  appliedRevision
  activeRevision {
    number
    confirmed
  }
}`, {"hash":"sha256:f85f16a616297a8ad3829c0b4a5c208a8456cd941c756c8b602743459a0c3e55"}) as unknown as TypedDocumentString<ConsoleMoreClustersQuery, ConsoleMoreClustersQueryVariables>;
export const ConsoleMoreProjectsDocument = new TypedDocumentString(`
    query ConsoleMoreProjects($tenant: ID!, $after: String) {
  node(id: $tenant) {
    ... on Tenant {
      projects(first: 10, after: $after) {
        nodes {
          ...ConsoleProjectCard
        }
        pageInfo {
          hasNextPage
          endCursor
        }
      }
    }
  }
}
    fragment ConsoleProjectCard on Project {
  id
  name
  viewerRole
  services(first: 20) {
    nodes {
      id
      name
      git {
        branch
      }
    }
  }
  environments(first: 10) {
    nodes {
      id
      name
      protected
      deployments(first: 3) {
        nodes {
          id
          stage
          createdAt
          release {
            number
            service {
              name
            }
          }
        }
      }
    }
    pageInfo {
      hasNextPage
    }
  }
}`, {"hash":"sha256:3ef740377604b07e367a05185ecd307caf8a3df5b2f60cf89ec6704c44836b92"}) as unknown as TypedDocumentString<ConsoleMoreProjectsQuery, ConsoleMoreProjectsQueryVariables>;
export const ConsolePeopleDocument = new TypedDocumentString(`
    query ConsolePeople($tenant: ID!) {
  node(id: $tenant) {
    ... on Tenant {
      id
      name
      members(first: 100) {
        nodes {
          id
          role
          user {
            email
            name
            kind
          }
        }
      }
      invitations(first: 20) {
        nodes {
          id
          email
          status
          expiresAt
        }
      }
    }
  }
}
    `, {"hash":"sha256:4d938f9058ab04c1c6c21939adc19b62a6e7327e728da9dc8b3363eb2503ec2e"}) as unknown as TypedDocumentString<ConsolePeopleQuery, ConsolePeopleQueryVariables>;
export const ConsoleInviteDocument = new TypedDocumentString(`
    mutation ConsoleInvite($tenant: ID!, $email: String!, $name: String!, $role: TenantRole) {
  inviteMember(
    input: {tenantId: $tenant, email: $email, name: $name, role: $role}
  ) {
    link
    userErrors {
      message
    }
  }
}
    `, {"hash":"sha256:2596e7ed3a23df4544319db243eb4df907ab6c1672bf3dc017256a923b887d65"}) as unknown as TypedDocumentString<ConsoleInviteMutation, ConsoleInviteMutationVariables>;
export const ConsoleRevokeInvitationDocument = new TypedDocumentString(`
    mutation ConsoleRevokeInvitation($id: ID!) {
  revokeInvitation(input: {invitationId: $id}) {
    invitation {
      id
      status
    }
    userErrors {
      message
    }
  }
}
    `, {"hash":"sha256:c0bc857661a0d505402c9031370961495e1303d99c9edc7ff9345ebbe24225d4"}) as unknown as TypedDocumentString<ConsoleRevokeInvitationMutation, ConsoleRevokeInvitationMutationVariables>;
export const ConsoleAdminTenantsDocument = new TypedDocumentString(`
    query ConsoleAdminTenants {
  viewer {
    tenants(first: 5) {
      nodes {
        id
        name
        viewerRole
      }
    }
  }
}
    `, {"hash":"sha256:647cf5cbfd0214f653ea645aec1b2081ab6b10938620ed4ed712cff8c57c39aa"}) as unknown as TypedDocumentString<ConsoleAdminTenantsQuery, ConsoleAdminTenantsQueryVariables>;