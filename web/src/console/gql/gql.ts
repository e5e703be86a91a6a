/* eslint-disable */
import * as types from './graphql';



/**
 * Map of all GraphQL operations in the project.
 *
 * This map has several performance disadvantages:
 * 1. It is not tree-shakeable, so it will include all operations in the project.
 * 2. It is not minifiable, so the string of a GraphQL query will be multiple times inside the bundle.
 * 3. It does not support dead code elimination, so it will add unused operations.
 *
 * Therefore it is highly recommended to use the babel or swc plugin for production.
 * Learn more about it here: https://the-guild.dev/graphql/codegen/plugins/presets/preset-client#reducing-bundle-size
 */
type Documents = {
    "\n  query ConsoleAccount {\n    viewer {\n      user { email }\n      tenants(first: 5) { nodes { id name } }\n      sessions(first: 100) {\n        nodes { id method address userAgent createdAt lastSeenAt current tenants { name } }\n        pageInfo { hasNextPage }\n      }\n    }\n  }\n": typeof types.ConsoleAccountDocument,
    "\n  mutation ConsoleRevokeSession($id: ID!) {\n    revokeSession(input: { sessionId: $id }) {\n      revokedSessionId\n      userErrors { message }\n    }\n  }\n": typeof types.ConsoleRevokeSessionDocument,
    "\n  mutation ConsoleCreateToken($name: String!, $tenant: ID, $days: Int) {\n    createApiToken(input: { name: $name, tenantId: $tenant, expiresInDays: $days }) {\n      secret\n      apiToken { prefix expiresAt }\n      userErrors { message }\n    }\n  }\n": typeof types.ConsoleCreateTokenDocument,
    "\n  query ConsoleApprovals {\n    viewer {\n      tenants(first: 5) {\n        nodes {\n          id\n          name\n          approvalQueue(first: 50) {\n            nodes {\n              id stage createdAt approvalExpiresAt\n              requestedBy { email }\n              release { number service { name } }\n              environment { name project { name } }\n            }\n            pageInfo { hasNextPage }\n          }\n        }\n      }\n    }\n  }\n": typeof types.ConsoleApprovalsDocument,
    "\n  query ConsoleAudit($tenant: ID!, $after: String, $filter: AuditEventFilter) {\n    node(id: $tenant) {\n      ... on Tenant {\n        name\n        auditEvents(first: 25, after: $after, filter: $filter) {\n          nodes { id action targetType createdAt clientAddress actor { email } details }\n          pageInfo { hasNextPage endCursor }\n        }\n      }\n    }\n  }\n": typeof types.ConsoleAuditDocument,
    "\n  query ConsoleBuild($id: ID!) {\n    node(id: $id) {\n      ... on Build {\n        id status message commit branch imageDigest attempts startedAt finishedAt\n        cluster { name }\n        log(first: 1) { truncated }\n      }\n    }\n  }\n": typeof types.ConsoleBuildDocument,
    "\n  subscription ConsoleBuildLog($id: ID!, $after: Int) {\n    buildLog(buildId: $id, after: $after) { number at text }\n  }\n": typeof types.ConsoleBuildLogDocument,
    "\n  query ConsoleCliLogin($code: String!) {\n    cliLogin(code: $code) { code clientAddress userAgent createdAt expiresAt }\n    viewer { tenants(first: 20) { nodes { id name } } }\n  }\n": typeof types.ConsoleCliLoginDocument,
    "\n  mutation ConsoleApproveCliLogin($code: String!, $tenant: ID!) {\n    approveCliLogin(input: { code: $code, tenantId: $tenant }) {\n      apiToken { name expiresAt }\n      userErrors { message }\n    }\n  }\n": typeof types.ConsoleApproveCliLoginDocument,
    "\n  query ConsoleCluster($id: ID!) {\n    node(id: $id) {\n      ... on Cluster {\n        id name status lastHeartbeatAge desiredRevision appliedRevision\n        labels { key value }\n        tenant { viewerRole }\n        activeRevision { number confirmed reportedAt }\n        inventory {\n          agentVersion kubernetesVersion capabilities\n          nodes(first: 100) { nodes { name ready } pageInfo { hasNextPage } }\n          workloads(first: 100) { nodes { namespace name replicas readyReplicas } pageInfo { hasNextPage } }\n        }\n        install { command }\n      }\n    }\n  }\n": typeof types.ConsoleClusterDocument,
    "\n  query ConsoleClusterRevisions($id: ID!) {\n    node(id: $id) {\n      ... on Cluster {\n        revisions(first: 10) {\n          nodes {\n            number hash createdAt\n            cause { action actor { email } }\n            outcomes { agent result at }\n          }\n          pageInfo { hasNextPage }\n        }\n      }\n    }\n  }\n": typeof types.ConsoleClusterRevisionsDocument,
    "\n  mutation ConsoleRegenerateToken($id: ID!, $name: String!) {\n    regenerateConnectToken(input: { clusterId: $id, confirmName: $name }) {\n      secret\n      userErrors { message }\n    }\n  }\n": typeof types.ConsoleRegenerateTokenDocument,
    "\n  query ConsolePreviewDeploy($input: DeployInput!) {\n    previewDeploy(input: $input) {\n      clusters {\n        cluster { name }\n        fromRevision\n        added { kind namespace name }\n        changed { kind namespace name }\n        removed { kind namespace name }\n        nowHeld { service reason }\n        released { service }\n      }\n      userErrors { field message code }\n    }\n  }\n": typeof types.ConsolePreviewDeployDocument,
    "\n  mutation ConsoleDeploy($input: DeployInput!) {\n    deploy(input: $input) {\n      deployment { id stage }\n      userErrors { field message code }\n    }\n  }\n": typeof types.ConsoleDeployDocument,
    "\n  mutation ConsoleApprove($id: ID!) {\n    approveDeployment(input: { deploymentId: $id }) {\n      deployment { id stage }\n      userErrors { message }\n    }\n  }\n": typeof types.ConsoleApproveDocument,
    "\n  mutation ConsoleReject($id: ID!) {\n    rejectDeployment(input: { deploymentId: $id }) {\n      deployment { id stage }\n      userErrors { message }\n    }\n  }\n": typeof types.ConsoleRejectDocument,
    "\n  mutation ConsoleCancel($id: ID!) {\n    cancelDeployment(input: { deploymentId: $id, reason: \"cancelled from the console\" }) {\n      deployment { id stage }\n      userErrors { message }\n    }\n  }\n": typeof types.ConsoleCancelDocument,
    "\n  mutation ConsoleRedeploy($id: ID!) {\n    redeploy(input: { deploymentId: $id }) {\n      deployment { id }\n      userErrors { message }\n    }\n  }\n": typeof types.ConsoleRedeployDocument,
    "\n  query ConsoleDeployment($id: ID!) {\n    node(id: $id) {\n      ... on Deployment {\n        id stage blocker message createdAt approvalExpiresAt\n        requestedBy { email }\n        release { number imageDigest service { id name } }\n        build { id }\n        environment { id name protected project { name viewerRole tenant { viewerRole } } }\n        cluster { id name }\n      }\n    }\n  }\n": typeof types.ConsoleDeploymentDocument,
    "\n  subscription DeploymentEvents($id: ID!, $after: String) {\n    deploymentEvents(deploymentId: $id, after: $after) {\n      cursor sequence stage blocker message at\n    }\n  }\n": typeof types.DeploymentEventsDocument,
    "\n  query ConsoleEnvironment($id: ID!) {\n    node(id: $id) {\n      ... on Environment {\n        id name protected\n        clusterSelector { key value }\n        namespaceSelector { key value }\n        placement { cluster { id name } namespace problem }\n        eligibleClusters(first: 10) { nodes { name } }\n        variables { id name scope secret value status statusReason }\n        project {\n          name viewerRole\n          tenant { viewerRole }\n          services(first: 20) {\n            nodes { id name releases(first: 5, environmentId: $id) { nodes { number imageDigest createdAt } } }\n          }\n        }\n        deployments(first: 10) { nodes { id stage createdAt release { number service { name } } } }\n      }\n    }\n  }\n": typeof types.ConsoleEnvironmentDocument,
    "\n  mutation ConsoleRollback($service: ID!, $env: ID!, $number: Int!) {\n    rollback(input: { serviceId: $service, environmentId: $env, releaseNumber: $number }) {\n      deployment { id }\n      userErrors { message }\n    }\n  }\n": typeof types.ConsoleRollbackDocument,
    "\n  query ConsoleLogs($service: ID!, $env: ID!, $filter: LogFilter) {\n    node(id: $service) {\n      ... on Service {\n        name\n        logs(environmentId: $env, filter: $filter, last: 200) {\n          nodes { number at stream text pod }\n        }\n      }\n    }\n  }\n": typeof types.ConsoleLogsDocument,
    "\n  subscription ConsoleLogTail($service: ID!, $env: ID!, $after: Int, $filter: LogFilter) {\n    serviceLogs(serviceId: $service, environmentId: $env, after: $after, filter: $filter) {\n      number at stream text pod\n    }\n  }\n": typeof types.ConsoleLogTailDocument,
    "\n  fragment ConsoleClusterRow on Cluster {\n    id name status lastHeartbeatAge desiredRevision appliedRevision\n    activeRevision { number confirmed }\n  }\n": typeof types.ConsoleClusterRowFragmentDoc,
    "\n  fragment ConsoleProjectCard on Project {\n    id name viewerRole\n    services(first: 20) { nodes { id name git { branch } } }\n    environments(first: 10) {\n      nodes {\n        id name protected\n        deployments(first: 3) {\n          nodes { id stage createdAt release { number service { name } } }\n        }\n      }\n      pageInfo { hasNextPage }\n    }\n  }\n": typeof types.ConsoleProjectCardFragmentDoc,
    "\n  fragment ConsoleTenantSection on Tenant {\n    id name viewerRole\n    clusters(first: 25) { nodes { ...ConsoleClusterRow } pageInfo { hasNextPage endCursor } }\n    projects(first: 10) { nodes { ...ConsoleProjectCard } pageInfo { hasNextPage endCursor } }\n  }\n": typeof types.ConsoleTenantSectionFragmentDoc,
    "\n  query ConsoleOverview($after: String) {\n    viewer {\n      user { email name }\n      tenants(first: 5, after: $after) { nodes { ...ConsoleTenantSection } pageInfo { hasNextPage endCursor } }\n    }\n  }\n": typeof types.ConsoleOverviewDocument,
    "\n  query ConsoleMoreClusters($tenant: ID!, $after: String) {\n    node(id: $tenant) {\n      ... on Tenant { clusters(first: 25, after: $after) { nodes { ...ConsoleClusterRow } pageInfo { hasNextPage endCursor } } }\n    }\n  }\n": typeof types.ConsoleMoreClustersDocument,
    "\n  query ConsoleMoreProjects($tenant: ID!, $after: String) {\n    node(id: $tenant) {\n      ... on Tenant { projects(first: 10, after: $after) { nodes { ...ConsoleProjectCard } pageInfo { hasNextPage endCursor } } }\n    }\n  }\n": typeof types.ConsoleMoreProjectsDocument,
    "\n  query ConsolePeople($tenant: ID!) {\n    node(id: $tenant) {\n      ... on Tenant {\n        id name\n        members(first: 100) { nodes { id role user { email name kind } } }\n        invitations(first: 20) { nodes { id email status expiresAt } }\n      }\n    }\n  }\n": typeof types.ConsolePeopleDocument,
    "\n  mutation ConsoleInvite($tenant: ID!, $email: String!, $name: String!, $role: TenantRole) {\n    inviteMember(input: { tenantId: $tenant, email: $email, name: $name, role: $role }) {\n      link\n      userErrors { message }\n    }\n  }\n": typeof types.ConsoleInviteDocument,
    "\n  mutation ConsoleRevokeInvitation($id: ID!) {\n    revokeInvitation(input: { invitationId: $id }) {\n      invitation { id status }\n      userErrors { message }\n    }\n  }\n": typeof types.ConsoleRevokeInvitationDocument,
    "\n  query ConsoleAdminTenants {\n    viewer { tenants(first: 5) { nodes { id name viewerRole } } }\n  }\n": typeof types.ConsoleAdminTenantsDocument,
};
const documents: Documents = {
    "\n  query ConsoleAccount {\n    viewer {\n      user { email }\n      tenants(first: 5) { nodes { id name } }\n      sessions(first: 100) {\n        nodes { id method address userAgent createdAt lastSeenAt current tenants { name } }\n        pageInfo { hasNextPage }\n      }\n    }\n  }\n": types.ConsoleAccountDocument,
    "\n  mutation ConsoleRevokeSession($id: ID!) {\n    revokeSession(input: { sessionId: $id }) {\n      revokedSessionId\n      userErrors { message }\n    }\n  }\n": types.ConsoleRevokeSessionDocument,
    "\n  mutation ConsoleCreateToken($name: String!, $tenant: ID, $days: Int) {\n    createApiToken(input: { name: $name, tenantId: $tenant, expiresInDays: $days }) {\n      secret\n      apiToken { prefix expiresAt }\n      userErrors { message }\n    }\n  }\n": types.ConsoleCreateTokenDocument,
    "\n  query ConsoleApprovals {\n    viewer {\n      tenants(first: 5) {\n        nodes {\n          id\n          name\n          approvalQueue(first: 50) {\n            nodes {\n              id stage createdAt approvalExpiresAt\n              requestedBy { email }\n              release { number service { name } }\n              environment { name project { name } }\n            }\n            pageInfo { hasNextPage }\n          }\n        }\n      }\n    }\n  }\n": types.ConsoleApprovalsDocument,
    "\n  query ConsoleAudit($tenant: ID!, $after: String, $filter: AuditEventFilter) {\n    node(id: $tenant) {\n      ... on Tenant {\n        name\n        auditEvents(first: 25, after: $after, filter: $filter) {\n          nodes { id action targetType createdAt clientAddress actor { email } details }\n          pageInfo { hasNextPage endCursor }\n        }\n      }\n    }\n  }\n": types.ConsoleAuditDocument,
    "\n  query ConsoleBuild($id: ID!) {\n    node(id: $id) {\n      ... on Build {\n        id status message commit branch imageDigest attempts startedAt finishedAt\n        cluster { name }\n        log(first: 1) { truncated }\n      }\n    }\n  }\n": types.ConsoleBuildDocument,
    "\n  subscription ConsoleBuildLog($id: ID!, $after: Int) {\n    buildLog(buildId: $id, after: $after) { number at text }\n  }\n": types.ConsoleBuildLogDocument,
    "\n  query ConsoleCliLogin($code: String!) {\n    cliLogin(code: $code) { code clientAddress userAgent createdAt expiresAt }\n    viewer { tenants(first: 20) { nodes { id name } } }\n  }\n": types.ConsoleCliLoginDocument,
    "\n  mutation ConsoleApproveCliLogin($code: String!, $tenant: ID!) {\n    approveCliLogin(input: { code: $code, tenantId: $tenant }) {\n      apiToken { name expiresAt }\n      userErrors { message }\n    }\n  }\n": types.ConsoleApproveCliLoginDocument,
    "\n  query ConsoleCluster($id: ID!) {\n    node(id: $id) {\n      ... on Cluster {\n        id name status lastHeartbeatAge desiredRevision appliedRevision\n        labels { key value }\n        tenant { viewerRole }\n        activeRevision { number confirmed reportedAt }\n        inventory {\n          agentVersion kubernetesVersion capabilities\n          nodes(first: 100) { nodes { name ready } pageInfo { hasNextPage } }\n          workloads(first: 100) { nodes { namespace name replicas readyReplicas } pageInfo { hasNextPage } }\n        }\n        install { command }\n      }\n    }\n  }\n": types.ConsoleClusterDocument,
    "\n  query ConsoleClusterRevisions($id: ID!) {\n    node(id: $id) {\n      ... on Cluster {\n        revisions(first: 10) {\n          nodes {\n            number hash createdAt\n            cause { action actor { email } }\n            outcomes { agent result at }\n          }\n          pageInfo { hasNextPage }\n        }\n      }\n    }\n  }\n": types.ConsoleClusterRevisionsDocument,
    "\n  mutation ConsoleRegenerateToken($id: ID!, $name: String!) {\n    regenerateConnectToken(input: { clusterId: $id, confirmName: $name }) {\n      secret\n      userErrors { message }\n    }\n  }\n": types.ConsoleRegenerateTokenDocument,
    "\n  query ConsolePreviewDeploy($input: DeployInput!) {\n    previewDeploy(input: $input) {\n      clusters {\n        cluster { name }\n        fromRevision\n        added { kind namespace name }\n        changed { kind namespace name }\n        removed { kind namespace name }\n        nowHeld { service reason }\n        released { service }\n      }\n      userErrors { field message code }\n    }\n  }\n": types.ConsolePreviewDeployDocument,
    "\n  mutation ConsoleDeploy($input: DeployInput!) {\n    deploy(input: $input) {\n      deployment { id stage }\n      userErrors { field message code }\n    }\n  }\n": types.ConsoleDeployDocument,
    "\n  mutation ConsoleApprove($id: ID!) {\n    approveDeployment(input: { deploymentId: $id }) {\n      deployment { id stage }\n      userErrors { message }\n    }\n  }\n": types.ConsoleApproveDocument,
    "\n  mutation ConsoleReject($id: ID!) {\n    rejectDeployment(input: { deploymentId: $id }) {\n      deployment { id stage }\n      userErrors { message }\n    }\n  }\n": types.ConsoleRejectDocument,
    "\n  mutation ConsoleCancel($id: ID!) {\n    cancelDeployment(input: { deploymentId: $id, reason: \"cancelled from the console\" }) {\n      deployment { id stage }\n      userErrors { message }\n    }\n  }\n": types.ConsoleCancelDocument,
    "\n  mutation ConsoleRedeploy($id: ID!) {\n    redeploy(input: { deploymentId: $id }) {\n      deployment { id }\n      userErrors { message }\n    }\n  }\n": types.ConsoleRedeployDocument,
    "\n  query ConsoleDeployment($id: ID!) {\n    node(id: $id) {\n      ... on Deployment {\n        id stage blocker message createdAt approvalExpiresAt\n        requestedBy { email }\n        release { number imageDigest service { id name } }\n        build { id }\n        environment { id name protected project { name viewerRole tenant { viewerRole } } }\n        cluster { id name }\n      }\n    }\n  }\n": types.ConsoleDeploymentDocument,
    "\n  subscription DeploymentEvents($id: ID!, $after: String) {\n    deploymentEvents(deploymentId: $id, after: $after) {\n      cursor sequence stage blocker message at\n    }\n  }\n": types.DeploymentEventsDocument,
    "\n  query ConsoleEnvironment($id: ID!) {\n    node(id: $id) {\n      ... on Environment {\n        id name protected\n        clusterSelector { key value }\n        namespaceSelector { key value }\n        placement { cluster { id name } namespace problem }\n        eligibleClusters(first: 10) { nodes { name } }\n        variables { id name scope secret value status statusReason }\n        project {\n          name viewerRole\n          tenant { viewerRole }\n          services(first: 20) {\n            nodes { id name releases(first: 5, environmentId: $id) { nodes { number imageDigest createdAt } } }\n          }\n        }\n        deployments(first: 10) { nodes { id stage createdAt release { number service { name } } } }\n      }\n    }\n  }\n": types.ConsoleEnvironmentDocument,
    "\n  mutation ConsoleRollback($service: ID!, $env: ID!, $number: Int!) {\n    rollback(input: { serviceId: $service, environmentId: $env, releaseNumber: $number }) {\n      deployment { id }\n      userErrors { message }\n    }\n  }\n": types.ConsoleRollbackDocument,
    "\n  query ConsoleLogs($service: ID!, $env: ID!, $filter: LogFilter) {\n    node(id: $service) {\n      ... on Service {\n        name\n        logs(environmentId: $env, filter: $filter, last: 200) {\n          nodes { number at stream text pod }\n        }\n      }\n    }\n  }\n": types.ConsoleLogsDocument,
    "\n  subscription ConsoleLogTail($service: ID!, $env: ID!, $after: Int, $filter: LogFilter) {\n    serviceLogs(serviceId: $service, environmentId: $env, after: $after, filter: $filter) {\n      number at stream text pod\n    }\n  }\n": types.ConsoleLogTailDocument,
    "\n  fragment ConsoleClusterRow on Cluster {\n    id name status lastHeartbeatAge desiredRevision appliedRevision\n    activeRevision { number confirmed }\n  }\n": types.ConsoleClusterRowFragmentDoc,
    "\n  fragment ConsoleProjectCard on Project {\n    id name viewerRole\n    services(first: 20) { nodes { id name git { branch } } }\n    environments(first: 10) {\n      nodes {\n        id name protected\n        deployments(first: 3) {\n          nodes { id stage createdAt release { number service { name } } }\n        }\n      }\n      pageInfo { hasNextPage }\n    }\n  }\n": types.ConsoleProjectCardFragmentDoc,
    "\n  fragment ConsoleTenantSection on Tenant {\n    id name viewerRole\n    clusters(first: 25) { nodes { ...ConsoleClusterRow } pageInfo { hasNextPage endCursor } }\n    projects(first: 10) { nodes { ...ConsoleProjectCard } pageInfo { hasNextPage endCursor } }\n  }\n": types.ConsoleTenantSectionFragmentDoc,
    "\n  query ConsoleOverview($after: String) {\n    viewer {\n      user { email name }\n      tenants(first: 5, after: $after) { nodes { ...ConsoleTenantSection } pageInfo { hasNextPage endCursor } }\n    }\n  }\n": types.ConsoleOverviewDocument,
    "\n  query ConsoleMoreClusters($tenant: ID!, $after: String) {\n    node(id: $tenant) {\n      ... on Tenant { clusters(first: 25, after: $after) { nodes { ...ConsoleClusterRow } pageInfo { hasNextPage endCursor } } }\n    }\n  }\n": types.ConsoleMoreClustersDocument,
    "\n  query ConsoleMoreProjects($tenant: ID!, $after: String) {\n    node(id: $tenant) {\n      ... on Tenant { projects(first: 10, after: $after) { nodes { ...ConsoleProjectCard } pageInfo { hasNextPage endCursor } } }\n    }\n  }\n": types.ConsoleMoreProjectsDocument,
    "\n  query ConsolePeople($tenant: ID!) {\n    node(id: $tenant) {\n      ... on Tenant {\n        id name\n        members(first: 100) { nodes { id role user { email name kind } } }\n        invitations(first: 20) { nodes { id email status expiresAt } }\n      }\n    }\n  }\n": types.ConsolePeopleDocument,
    "\n  mutation ConsoleInvite($tenant: ID!, $email: String!, $name: String!, $role: TenantRole) {\n    inviteMember(input: { tenantId: $tenant, email: $email, name: $name, role: $role }) {\n      link\n      userErrors { message }\n    }\n  }\n": types.ConsoleInviteDocument,
    "\n  mutation ConsoleRevokeInvitation($id: ID!) {\n    revokeInvitation(input: { invitationId: $id }) {\n      invitation { id status }\n      userErrors { message }\n    }\n  }\n": types.ConsoleRevokeInvitationDocument,
    "\n  query ConsoleAdminTenants {\n    viewer { tenants(first: 5) { nodes { id name viewerRole } } }\n  }\n": types.ConsoleAdminTenantsDocument,
};

/**
 * The graphql function is used to parse GraphQL queries into a document that can be used by GraphQL clients.
 */
export function graphql(source: "\n  query ConsoleAccount {\n    viewer {\n      user { email }\n      tenants(first: 5) { nodes { id name } }\n      sessions(first: 100) {\n        nodes { id method address userAgent createdAt lastSeenAt current tenants { name } }\n        pageInfo { hasNextPage }\n      }\n    }\n  }\n"): typeof import('./graphql').ConsoleAccountDocument;
/**
 * The graphql function is used to parse GraphQL queries into a document that can be used by GraphQL clients.
 */
export function graphql(source: "\n  mutation ConsoleRevokeSession($id: ID!) {\n    revokeSession(input: { sessionId: $id }) {\n      revokedSessionId\n      userErrors { message }\n    }\n  }\n"): typeof import('./graphql').ConsoleRevokeSessionDocument;
/**
 * The graphql function is used to parse GraphQL queries into a document that can be used by GraphQL clients.
 */
export function graphql(source: "\n  mutation ConsoleCreateToken($name: String!, $tenant: ID, $days: Int) {\n    createApiToken(input: { name: $name, tenantId: $tenant, expiresInDays: $days }) {\n      secret\n      apiToken { prefix expiresAt }\n      userErrors { message }\n    }\n  }\n"): typeof import('./graphql').ConsoleCreateTokenDocument;
/**
 * The graphql function is used to parse GraphQL queries into a document that can be used by GraphQL clients.
 */
export function graphql(source: "\n  query ConsoleApprovals {\n    viewer {\n      tenants(first: 5) {\n        nodes {\n          id\n          name\n          approvalQueue(first: 50) {\n            nodes {\n              id stage createdAt approvalExpiresAt\n              requestedBy { email }\n              release { number service { name } }\n              environment { name project { name } }\n            }\n            pageInfo { hasNextPage }\n          }\n        }\n      }\n    }\n  }\n"): typeof import('./graphql').ConsoleApprovalsDocument;
/**
 * The graphql function is used to parse GraphQL queries into a document that can be used by GraphQL clients.
 */
export function graphql(source: "\n  query ConsoleAudit($tenant: ID!, $after: String, $filter: AuditEventFilter) {\n    node(id: $tenant) {\n      ... on Tenant {\n        name\n        auditEvents(first: 25, after: $after, filter: $filter) {\n          nodes { id action targetType createdAt clientAddress actor { email } details }\n          pageInfo { hasNextPage endCursor }\n        }\n      }\n    }\n  }\n"): typeof import('./graphql').ConsoleAuditDocument;
/**
 * The graphql function is used to parse GraphQL queries into a document that can be used by GraphQL clients.
 */
export function graphql(source: "\n  query ConsoleBuild($id: ID!) {\n    node(id: $id) {\n      ... on Build {\n        id status message commit branch imageDigest attempts startedAt finishedAt\n        cluster { name }\n        log(first: 1) { truncated }\n      }\n    }\n  }\n"): typeof import('./graphql').ConsoleBuildDocument;
/**
 * The graphql function is used to parse GraphQL queries into a document that can be used by GraphQL clients.
 */
export function graphql(source: "\n  subscription ConsoleBuildLog($id: ID!, $after: Int) {\n    buildLog(buildId: $id, after: $after) { number at text }\n  }\n"): typeof import('./graphql').ConsoleBuildLogDocument;
/**
 * The graphql function is used to parse GraphQL queries into a document that can be used by GraphQL clients.
 */
export function graphql(source: "\n  query ConsoleCliLogin($code: String!) {\n    cliLogin(code: $code) { code clientAddress userAgent createdAt expiresAt }\n    viewer { tenants(first: 20) { nodes { id name } } }\n  }\n"): typeof import('./graphql').ConsoleCliLoginDocument;
/**
 * The graphql function is used to parse GraphQL queries into a document that can be used by GraphQL clients.
 */
export function graphql(source: "\n  mutation ConsoleApproveCliLogin($code: String!, $tenant: ID!) {\n    approveCliLogin(input: { code: $code, tenantId: $tenant }) {\n      apiToken { name expiresAt }\n      userErrors { message }\n    }\n  }\n"): typeof import('./graphql').ConsoleApproveCliLoginDocument;
/**
 * The graphql function is used to parse GraphQL queries into a document that can be used by GraphQL clients.
 */
export function graphql(source: "\n  query ConsoleCluster($id: ID!) {\n    node(id: $id) {\n      ... on Cluster {\n        id name status lastHeartbeatAge desiredRevision appliedRevision\n        labels { key value }\n        tenant { viewerRole }\n        activeRevision { number confirmed reportedAt }\n        inventory {\n          agentVersion kubernetesVersion capabilities\n          nodes(first: 100) { nodes { name ready } pageInfo { hasNextPage } }\n          workloads(first: 100) { nodes { namespace name replicas readyReplicas } pageInfo { hasNextPage } }\n        }\n        install { command }\n      }\n    }\n  }\n"): typeof import('./graphql').ConsoleClusterDocument;
/**
 * The graphql function is used to parse GraphQL queries into a document that can be used by GraphQL clients.
 */
export function graphql(source: "\n  query ConsoleClusterRevisions($id: ID!) {\n    node(id: $id) {\n      ... on Cluster {\n        revisions(first: 10) {\n          nodes {\n            number hash createdAt\n            cause { action actor { email } }\n            outcomes { agent result at }\n          }\n          pageInfo { hasNextPage }\n        }\n      }\n    }\n  }\n"): typeof import('./graphql').ConsoleClusterRevisionsDocument;
/**
 * The graphql function is used to parse GraphQL queries into a document that can be used by GraphQL clients.
 */
export function graphql(source: "\n  mutation ConsoleRegenerateToken($id: ID!, $name: String!) {\n    regenerateConnectToken(input: { clusterId: $id, confirmName: $name }) {\n      secret\n      userErrors { message }\n    }\n  }\n"): typeof import('./graphql').ConsoleRegenerateTokenDocument;
/**
 * The graphql function is used to parse GraphQL queries into a document that can be used by GraphQL clients.
 */
export function graphql(source: "\n  query ConsolePreviewDeploy($input: DeployInput!) {\n    previewDeploy(input: $input) {\n      clusters {\n        cluster { name }\n        fromRevision\n        added { kind namespace name }\n        changed { kind namespace name }\n        removed { kind namespace name }\n        nowHeld { service reason }\n        released { service }\n      }\n      userErrors { field message code }\n    }\n  }\n"): typeof import('./graphql').ConsolePreviewDeployDocument;
/**
 * The graphql function is used to parse GraphQL queries into a document that can be used by GraphQL clients.
 */
export function graphql(source: "\n  mutation ConsoleDeploy($input: DeployInput!) {\n    deploy(input: $input) {\n      deployment { id stage }\n      userErrors { field message code }\n    }\n  }\n"): typeof import('./graphql').ConsoleDeployDocument;
/**
 * The graphql function is used to parse GraphQL queries into a document that can be used by GraphQL clients.
 */
export function graphql(source: "\n  mutation ConsoleApprove($id: ID!) {\n    approveDeployment(input: { deploymentId: $id }) {\n      deployment { id stage }\n      userErrors { message }\n    }\n  }\n"): typeof import('./graphql').ConsoleApproveDocument;
/**
 * The graphql function is used to parse GraphQL queries into a document that can be used by GraphQL clients.
 */
export function graphql(source: "\n  mutation ConsoleReject($id: ID!) {\n    rejectDeployment(input: { deploymentId: $id }) {\n      deployment { id stage }\n      userErrors { message }\n    }\n  }\n"): typeof import('./graphql').ConsoleRejectDocument;
/**
 * The graphql function is used to parse GraphQL queries into a document that can be used by GraphQL clients.
 */
export function graphql(source: "\n  mutation ConsoleCancel($id: ID!) {\n    cancelDeployment(input: { deploymentId: $id, reason: \"cancelled from the console\" }) {\n      deployment { id stage }\n      userErrors { message }\n    }\n  }\n"): typeof import('./graphql').ConsoleCancelDocument;
/**
 * The graphql function is used to parse GraphQL queries into a document that can be used by GraphQL clients.
 */
export function graphql(source: "\n  mutation ConsoleRedeploy($id: ID!) {\n    redeploy(input: { deploymentId: $id }) {\n      deployment { id }\n      userErrors { message }\n    }\n  }\n"): typeof import('./graphql').ConsoleRedeployDocument;
/**
 * The graphql function is used to parse GraphQL queries into a document that can be used by GraphQL clients.
 */
export function graphql(source: "\n  query ConsoleDeployment($id: ID!) {\n    node(id: $id) {\n      ... on Deployment {\n        id stage blocker message createdAt approvalExpiresAt\n        requestedBy { email }\n        release { number imageDigest service { id name } }\n        build { id }\n        environment { id name protected project { name viewerRole tenant { viewerRole } } }\n        cluster { id name }\n      }\n    }\n  }\n"): typeof import('./graphql').ConsoleDeploymentDocument;
/**
 * The graphql function is used to parse GraphQL queries into a document that can be used by GraphQL clients.
 */
export function graphql(source: "\n  subscription DeploymentEvents($id: ID!, $after: String) {\n    deploymentEvents(deploymentId: $id, after: $after) {\n      cursor sequence stage blocker message at\n    }\n  }\n"): typeof import('./graphql').DeploymentEventsDocument;
/**
 * The graphql function is used to parse GraphQL queries into a document that can be used by GraphQL clients.
 */
export function graphql(source: "\n  query ConsoleEnvironment($id: ID!) {\n    node(id: $id) {\n      ... on Environment {\n        id name protected\n        clusterSelector { key value }\n        namespaceSelector { key value }\n        placement { cluster { id name } namespace problem }\n        eligibleClusters(first: 10) { nodes { name } }\n        variables { id name scope secret value status statusReason }\n        project {\n          name viewerRole\n          tenant { viewerRole }\n          services(first: 20) {\n            nodes { id name releases(first: 5, environmentId: $id) { nodes { number imageDigest createdAt } } }\n          }\n        }\n        deployments(first: 10) { nodes { id stage createdAt release { number service { name } } } }\n      }\n    }\n  }\n"): typeof import('./graphql').ConsoleEnvironmentDocument;
/**
 * The graphql function is used to parse GraphQL queries into a document that can be used by GraphQL clients.
 */
export function graphql(source: "\n  mutation ConsoleRollback($service: ID!, $env: ID!, $number: Int!) {\n    rollback(input: { serviceId: $service, environmentId: $env, releaseNumber: $number }) {\n      deployment { id }\n      userErrors { message }\n    }\n  }\n"): typeof import('./graphql').ConsoleRollbackDocument;
/**
 * The graphql function is used to parse GraphQL queries into a document that can be used by GraphQL clients.
 */
export function graphql(source: "\n  query ConsoleLogs($service: ID!, $env: ID!, $filter: LogFilter) {\n    node(id: $service) {\n      ... on Service {\n        name\n        logs(environmentId: $env, filter: $filter, last: 200) {\n          nodes { number at stream text pod }\n        }\n      }\n    }\n  }\n"): typeof import('./graphql').ConsoleLogsDocument;
/**
 * The graphql function is used to parse GraphQL queries into a document that can be used by GraphQL clients.
 */
export function graphql(source: "\n  subscription ConsoleLogTail($service: ID!, $env: ID!, $after: Int, $filter: LogFilter) {\n    serviceLogs(serviceId: $service, environmentId: $env, after: $after, filter: $filter) {\n      number at stream text pod\n    }\n  }\n"): typeof import('./graphql').ConsoleLogTailDocument;
/**
 * The graphql function is used to parse GraphQL queries into a document that can be used by GraphQL clients.
 */
export function graphql(source: "\n  fragment ConsoleClusterRow on Cluster {\n    id name status lastHeartbeatAge desiredRevision appliedRevision\n    activeRevision { number confirmed }\n  }\n"): typeof import('./graphql').ConsoleClusterRowFragmentDoc;
/**
 * The graphql function is used to parse GraphQL queries into a document that can be used by GraphQL clients.
 */
export function graphql(source: "\n  fragment ConsoleProjectCard on Project {\n    id name viewerRole\n    services(first: 20) { nodes { id name git { branch } } }\n    environments(first: 10) {\n      nodes {\n        id name protected\n        deployments(first: 3) {\n          nodes { id stage createdAt release { number service { name } } }\n        }\n      }\n      pageInfo { hasNextPage }\n    }\n  }\n"): typeof import('./graphql').ConsoleProjectCardFragmentDoc;
/**
 * The graphql function is used to parse GraphQL queries into a document that can be used by GraphQL clients.
 */
export function graphql(source: "\n  fragment ConsoleTenantSection on Tenant {\n    id name viewerRole\n    clusters(first: 25) { nodes { ...ConsoleClusterRow } pageInfo { hasNextPage endCursor } }\n    projects(first: 10) { nodes { ...ConsoleProjectCard } pageInfo { hasNextPage endCursor } }\n  }\n"): typeof import('./graphql').ConsoleTenantSectionFragmentDoc;
/**
 * The graphql function is used to parse GraphQL queries into a document that can be used by GraphQL clients.
 */
export function graphql(source: "\n  query ConsoleOverview($after: String) {\n    viewer {\n      user { email name }\n      tenants(first: 5, after: $after) { nodes { ...ConsoleTenantSection } pageInfo { hasNextPage endCursor } }\n    }\n  }\n"): typeof import('./graphql').ConsoleOverviewDocument;
/**
 * The graphql function is used to parse GraphQL queries into a document that can be used by GraphQL clients.
 */
export function graphql(source: "\n  query ConsoleMoreClusters($tenant: ID!, $after: String) {\n    node(id: $tenant) {\n      ... on Tenant { clusters(first: 25, after: $after) { nodes { ...ConsoleClusterRow } pageInfo { hasNextPage endCursor } } }\n    }\n  }\n"): typeof import('./graphql').ConsoleMoreClustersDocument;
/**
 * The graphql function is used to parse GraphQL queries into a document that can be used by GraphQL clients.
 */
export function graphql(source: "\n  query ConsoleMoreProjects($tenant: ID!, $after: String) {\n    node(id: $tenant) {\n      ... on Tenant { projects(first: 10, after: $after) { nodes { ...ConsoleProjectCard } pageInfo { hasNextPage endCursor } } }\n    }\n  }\n"): typeof import('./graphql').ConsoleMoreProjectsDocument;
/**
 * The graphql function is used to parse GraphQL queries into a document that can be used by GraphQL clients.
 */
export function graphql(source: "\n  query ConsolePeople($tenant: ID!) {\n    node(id: $tenant) {\n      ... on Tenant {\n        id name\n        members(first: 100) { nodes { id role user { email name kind } } }\n        invitations(first: 20) { nodes { id email status expiresAt } }\n      }\n    }\n  }\n"): typeof import('./graphql').ConsolePeopleDocument;
/**
 * The graphql function is used to parse GraphQL queries into a document that can be used by GraphQL clients.
 */
export function graphql(source: "\n  mutation ConsoleInvite($tenant: ID!, $email: String!, $name: String!, $role: TenantRole) {\n    inviteMember(input: { tenantId: $tenant, email: $email, name: $name, role: $role }) {\n      link\n      userErrors { message }\n    }\n  }\n"): typeof import('./graphql').ConsoleInviteDocument;
/**
 * The graphql function is used to parse GraphQL queries into a document that can be used by GraphQL clients.
 */
export function graphql(source: "\n  mutation ConsoleRevokeInvitation($id: ID!) {\n    revokeInvitation(input: { invitationId: $id }) {\n      invitation { id status }\n      userErrors { message }\n    }\n  }\n"): typeof import('./graphql').ConsoleRevokeInvitationDocument;
/**
 * The graphql function is used to parse GraphQL queries into a document that can be used by GraphQL clients.
 */
export function graphql(source: "\n  query ConsoleAdminTenants {\n    viewer { tenants(first: 5) { nodes { id name viewerRole } } }\n  }\n"): typeof import('./graphql').ConsoleAdminTenantsDocument;


export function graphql(source: string) {
  return (documents as any)[source] ?? {};
}
