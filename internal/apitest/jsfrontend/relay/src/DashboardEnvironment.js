const { graphql } = require('relay-runtime');

graphql`
  fragment DashboardEnvironment_environment on Environment @argumentDefinitions(count: { type: "Int" }) {
    id
    name
    protected
    deployments(first: $count) @connection(key: "DashboardEnvironment_deployments") {
      edges {
        node {
          id
          stage
          createdAt
        }
      }
    }
  }
`;
