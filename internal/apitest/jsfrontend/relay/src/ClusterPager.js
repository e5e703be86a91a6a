const { graphql } = require('relay-runtime');

// A tenant's clusters, paged as usePaginationFragment pages them: forwards
// (loadNext: first/after) and backwards (loadPrevious: last/before), each
// fragment refetchable through node(id:) with the next page's cursor.
graphql`
  fragment ClusterPagerForward_tenant on Tenant
  @refetchable(queryName: "ClusterPagerForwardQuery")
  @argumentDefinitions(count: { type: "Int", defaultValue: 3 }, cursor: { type: "String" }) {
    id
    clusters(first: $count, after: $cursor) @connection(key: "ClusterPagerForward_clusters") {
      edges {
        cursor
        node {
          id
          name
        }
      }
      pageInfo {
        hasNextPage
        endCursor
      }
    }
  }
`;

graphql`
  fragment ClusterPagerBackward_tenant on Tenant
  @refetchable(queryName: "ClusterPagerBackwardQuery")
  @argumentDefinitions(count: { type: "Int", defaultValue: 3 }, cursor: { type: "String" }) {
    id
    clusters(last: $count, before: $cursor) @connection(key: "ClusterPagerBackward_clusters") {
      edges {
        cursor
        node {
          id
          name
        }
      }
      pageInfo {
        hasPreviousPage
        startCursor
      }
    }
  }
`;
