const { graphql } = require('relay-runtime');

// A tenant, refetchable by its id (Tenant is a Node): its clusters and
// projects are connections in fragments of their own (a refetchable
// fragment's own connection is the one it pages: ClusterPager.js).
graphql`
  fragment DashboardTenant_tenant on Tenant
  @refetchable(queryName: "DashboardTenantRefetchQuery")
  @argumentDefinitions(count: { type: "Int", defaultValue: 3 }) {
    id
    name
    viewerRole
    ...DashboardTenant_clusters @arguments(count: $count)
    ...DashboardTenant_projects @arguments(count: $count)
  }
`;

graphql`
  fragment DashboardTenant_clusters on Tenant @argumentDefinitions(count: { type: "Int" }) {
    clusters(first: $count) @connection(key: "DashboardTenant_clusters") {
      edges {
        node {
          id
          name
          status
        }
      }
    }
  }
`;

graphql`
  fragment DashboardTenant_projects on Tenant @argumentDefinitions(count: { type: "Int" }) {
    projects(first: $count) @connection(key: "DashboardTenant_projects") {
      edges {
        node {
          id
          ...DashboardProject_project @arguments(count: $count)
        }
      }
    }
  }
`;
