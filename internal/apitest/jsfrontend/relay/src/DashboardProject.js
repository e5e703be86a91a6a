const { graphql } = require('relay-runtime');

graphql`
  fragment DashboardProject_project on Project @argumentDefinitions(count: { type: "Int" }) {
    id
    name
    environments(first: $count) @connection(key: "DashboardProject_environments") {
      edges {
        node {
          id
          ...DashboardEnvironment_environment @arguments(count: $count)
        }
      }
    }
  }
`;
