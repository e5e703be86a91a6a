/* eslint-disable */
/** Internal type. DO NOT USE DIRECTLY. */
type Exact<T extends { [key: string]: unknown }> = { [K in keyof T]: T[K] };
/** Internal type. DO NOT USE DIRECTLY. */
export type Incremental<T> = T | { [P in keyof T]?: P extends ' $fragmentName' | '__typename' ? T[P] : never };
import type { DocumentTypeDecoration } from '@graphql-typed-document-node/core';
export type ClusterStatus =
  | 'CONNECTED'
  /** No heartbeat for 60 seconds. */
  | 'DISCONNECTED'
  /** No agent has connected yet. */
  | 'PENDING';

export type DeploymentStage =
  | 'AWAITING_APPROVAL'
  | 'BUILDING'
  | 'CANCELLED'
  | 'DELIVERING'
  | 'FAILED'
  | 'PROBING'
  | 'QUEUED'
  | 'RETIRING'
  | 'ROLLED_BACK'
  | 'STARTING'
  | 'SUCCEEDED'
  | 'SUPERSEDED'
  | 'SWITCHING_TRAFFIC';

export type ProjectRole =
  /** Changes services and deploys to unprotected environments. */
  | 'EDITOR'
  /** Manages the project, its environments and members; deploys anywhere; approves. */
  | 'PROJECT_MANAGER'
  /** Reads. */
  | 'VIEWER';

export type TenantRole =
  /** Manages clusters, members, the plan and reads the audit history; holds every project capability. */
  | 'ADMIN'
  /** Sees the tenant and its clusters; project access comes from project roles. */
  | 'MEMBER';

export type ConsoleOverviewQueryVariables = Exact<{ [key: string]: never; }>;


export type ConsoleOverviewQuery = { viewer: { user: { email: string, name: string }, tenants: { nodes: Array<{ id: string, name: string, viewerRole: TenantRole, clusters: { nodes: Array<{ id: string, name: string, status: ClusterStatus, lastHeartbeatAge: number | null, desiredRevision: number, appliedRevision: number, activeRevision: { number: number, confirmed: boolean } | null }> }, projects: { nodes: Array<{ id: string, name: string, viewerRole: ProjectRole, environments: { nodes: Array<{ id: string, name: string, protected: boolean, deployments: { nodes: Array<{ id: string, stage: DeploymentStage, createdAt: string, release: { number: number, service: { name: string } } }> } }> } }> } }> } } };

export type ConsoleDeploymentQueryVariables = Exact<{
  id: string | number;
}>;


export type ConsoleDeploymentQuery = { node:
    | { id: string, stage: DeploymentStage, blocker: string | null, message: string, createdAt: string, release: { number: number, imageDigest: string, service: { name: string } }, environment: { name: string, protected: boolean, project: { name: string, viewerRole: ProjectRole } }, cluster: { name: string } }
    | Record<PropertyKey, never>
   | null };

export type DeploymentEventsSubscriptionVariables = Exact<{
  id: string | number;
  after?: string | null | undefined;
}>;


export type DeploymentEventsSubscription = { deploymentEvents: { cursor: string, sequence: number, stage: DeploymentStage, blocker: string | null, message: string, at: string } };

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

export const ConsoleOverviewDocument = new TypedDocumentString(`
    query ConsoleOverview {
  viewer {
    user {
      email
      name
    }
    tenants(first: 5) {
      nodes {
        id
        name
        viewerRole
        clusters(first: 25) {
          nodes {
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
        }
        projects(first: 10) {
          nodes {
            id
            name
            viewerRole
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
            }
          }
        }
      }
    }
  }
}
    `) as unknown as TypedDocumentString<ConsoleOverviewQuery, ConsoleOverviewQueryVariables>;
export const ConsoleDeploymentDocument = new TypedDocumentString(`
    query ConsoleDeployment($id: ID!) {
  node(id: $id) {
    ... on Deployment {
      id
      stage
      blocker
      message
      createdAt
      release {
        number
        imageDigest
        service {
          name
        }
      }
      environment {
        name
        protected
        project {
          name
          viewerRole
        }
      }
      cluster {
        name
      }
    }
  }
}
    `) as unknown as TypedDocumentString<ConsoleDeploymentQuery, ConsoleDeploymentQueryVariables>;
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
    `) as unknown as TypedDocumentString<DeploymentEventsSubscription, DeploymentEventsSubscriptionVariables>;