// The dashboard's documents, as a Relay app writes them. relay-compiler
// (relay.config.json) reads the graphql tags against the repository's
// schema.graphqls; nothing here runs: relay.mjs loads what it generates.
const { graphql } = require('relay-runtime');

// viewer → tenants → projects → environments → deployments, and each
// tenant's clusters: every list a @connection.
graphql`
  query DashboardQuery($count: Int!) {
    viewer {
      user {
        id
        email
      }
      ...Dashboard_viewer @arguments(count: $count)
    }
  }
`;

graphql`
  fragment Dashboard_viewer on Viewer @argumentDefinitions(count: { type: "Int!" }) {
    tenants(first: $count) @connection(key: "Dashboard_tenants") {
      edges {
        node {
          id
          ...DashboardTenant_tenant @arguments(count: $count)
        }
      }
    }
  }
`;
