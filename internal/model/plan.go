package model

type PlanName string

const (
	PlanFree       PlanName = "FREE"
	PlanTeam       PlanName = "TEAM"
	PlanEnterprise PlanName = "ENTERPRISE"
)

type LimitedResource string

const (
	LimitClusters              LimitedResource = "CLUSTERS"
	LimitProjects              LimitedResource = "PROJECTS"
	LimitProtectedEnvironments LimitedResource = "PROTECTED_ENVIRONMENTS"
	LimitMembers               LimitedResource = "MEMBERS"
	LimitServices              LimitedResource = "SERVICES"
	// LimitConcurrentBuilds caps the builds running at once in a tenant:
	// the others wait for a slot, none fails for it.
	LimitConcurrentBuilds LimitedResource = "CONCURRENT_BUILDS"
)

// LimitedResources lists every limited resource in display order.
func LimitedResources() []LimitedResource { return append([]LimitedResource(nil), limitedResources...) }

// Unlimited marks a resource a plan does not cap.
const Unlimited = -1

// Limits gives a plan's cap for each resource; Unlimited where there is none.
func (p PlanName) Limits() map[LimitedResource]int {
	switch p {
	case PlanTeam:
		return map[LimitedResource]int{
			LimitClusters: 10, LimitProjects: 25, LimitProtectedEnvironments: 10, LimitMembers: 50, LimitServices: 250,
			LimitConcurrentBuilds: 5,
		}
	case PlanEnterprise:
		return map[LimitedResource]int{
			LimitClusters: Unlimited, LimitProjects: Unlimited, LimitProtectedEnvironments: Unlimited,
			LimitMembers: Unlimited, LimitServices: Unlimited, LimitConcurrentBuilds: Unlimited,
		}
	default: // FREE
		return map[LimitedResource]int{
			LimitClusters: 2, LimitProjects: 3, LimitProtectedEnvironments: 1, LimitMembers: 5, LimitServices: 20,
			LimitConcurrentBuilds: 1,
		}
	}
}

// Usage is how much of each limited resource a tenant uses now.
type Usage map[LimitedResource]int

// PlanLimit is one limit beside its use.
type PlanLimit struct {
	Resource LimitedResource
	Limit    *int
	Used     int
}
