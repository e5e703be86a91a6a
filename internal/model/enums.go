package model

import (
	"fmt"
	"io"
	"slices"
	"strconv"
)

type TenantRole string

const (
	TenantAdmin  TenantRole = "ADMIN"
	TenantMember TenantRole = "MEMBER"
)

type ProjectRole string

const (
	ProjectManager ProjectRole = "PROJECT_MANAGER"
	ProjectEditor  ProjectRole = "EDITOR"
	ProjectViewer  ProjectRole = "VIEWER"
)

type UserKind string

const (
	UserHuman       UserKind = "HUMAN"
	UserIntegration UserKind = "INTEGRATION"
)

type ClusterStatus string

const (
	ClusterPending      ClusterStatus = "PENDING"
	ClusterConnected    ClusterStatus = "CONNECTED"
	ClusterDisconnected ClusterStatus = "DISCONNECTED"
)

type DeploymentStage string

const (
	StageQueued           DeploymentStage = "QUEUED"
	StageBuilding         DeploymentStage = "BUILDING"
	StageAwaitingApproval DeploymentStage = "AWAITING_APPROVAL"
	StageDelivering       DeploymentStage = "DELIVERING"
	StageStarting         DeploymentStage = "STARTING"
	StageProbing          DeploymentStage = "PROBING"
	StageSwitchingTraffic DeploymentStage = "SWITCHING_TRAFFIC"
	StageRetiring         DeploymentStage = "RETIRING"
	StageSucceeded        DeploymentStage = "SUCCEEDED"
	StageFailed           DeploymentStage = "FAILED"
	StageRolledBack       DeploymentStage = "ROLLED_BACK"
	StageSuperseded       DeploymentStage = "SUPERSEDED"
	StageCancelled        DeploymentStage = "CANCELLED"
)

// The stage sets every layer takes its vocabulary from: the store gets
// them as query parameters, the agent's protocol and rollouts name the
// same values. Each is in the order of a deployment's way.
var (
	// terminalStages end a deployment: nothing moves it on.
	terminalStages = []DeploymentStage{StageSucceeded, StageFailed, StageRolledBack, StageSuperseded, StageCancelled}
	// rollingStages are a rollout under way on its cluster: delivered,
	// not ended.
	rollingStages = []DeploymentStage{StageDelivering, StageStarting, StageProbing, StageSwitchingTraffic, StageRetiring}
	// agentStages are those a cluster's agent reports.
	agentStages = []DeploymentStage{StageStarting, StageProbing, StageSwitchingTraffic, StageRetiring,
		StageSucceeded, StageFailed, StageRolledBack}
)

// TerminalStages are the stages that end a deployment.
func TerminalStages() []DeploymentStage { return slices.Clone(terminalStages) }

// RollingStages are the stages of a rollout under way on its cluster:
// delivered and not ended.
func RollingStages() []DeploymentStage { return slices.Clone(rollingStages) }

// LiveStages are the stages whose release is what should run: rolling
// out, or succeeded.
func LiveStages() []DeploymentStage { return append(RollingStages(), StageSucceeded) }

// AgentStages are the stages a cluster's agent reports, in order.
func AgentStages() []DeploymentStage { return slices.Clone(agentStages) }

// Terminal stages end a deployment: nothing moves it on.
func (s DeploymentStage) Terminal() bool { return slices.Contains(terminalStages, s) }

// Live tells whether the deployment's release is what should run: it was
// released to its cluster (approved where needed) and did not end
// without success.
func (s DeploymentStage) Live() bool { return s == StageSucceeded || slices.Contains(rollingStages, s) }

// FromAgent tells whether an agent may report the stage.
func (s DeploymentStage) FromAgent() bool { return slices.Contains(agentStages, s) }

// Rank orders the stages of a deployment's way: a report never moves a
// deployment to a lower rank. Every terminal stage ranks above every
// other.
func (s DeploymentStage) Rank() int {
	if s.Terminal() {
		return 100
	}
	return slices.Index(deploymentStages, s)
}

// The values each enum accepts, in schema order.
var (
	tenantRoles      = []TenantRole{TenantAdmin, TenantMember}
	projectRoles     = []ProjectRole{ProjectManager, ProjectEditor, ProjectViewer}
	userKinds        = []UserKind{UserHuman, UserIntegration}
	clusterStatuses  = []ClusterStatus{ClusterPending, ClusterConnected, ClusterDisconnected}
	deploymentStages = []DeploymentStage{
		StageQueued, StageBuilding, StageAwaitingApproval, StageDelivering, StageStarting, StageProbing,
		StageSwitchingTraffic, StageRetiring, StageSucceeded, StageFailed, StageRolledBack, StageSuperseded, StageCancelled,
	}
	planNames         = []PlanName{PlanFree, PlanTeam, PlanEnterprise}
	variableScopes    = []VariableScope{VariableProject, VariableEnvironment, VariableService}
	commandKinds      = []CommandKind{CommandRestartProcess, CommandResync, CommandCollectDiagnostics}
	commandStatuses   = []CommandStatus{CommandQueued, CommandDelivered, CommandApplied, CommandFailed}
	approvalDecisions = []ApprovalDecision{Approved, Rejected}
	limitedResources  = []LimitedResource{LimitClusters, LimitProjects, LimitProtectedEnvironments, LimitMembers, LimitServices,
		LimitConcurrentBuilds}
	configChangeKinds = []ConfigChangeKind{ConfigAdded, ConfigChanged, ConfigRemoved}
)

// The enums marshal to and from GraphQL themselves (gqlgen's Marshaler and
// Unmarshaler interfaces need only io.Writer), so the API and the domain
// share one set of values.

func (v TenantRole) MarshalGQL(w io.Writer)     { marshalEnum(w, v) }
func (v *TenantRole) UnmarshalGQL(x any) error  { return unmarshalEnum(x, v, tenantRoles) }
func (v ProjectRole) MarshalGQL(w io.Writer)    { marshalEnum(w, v) }
func (v *ProjectRole) UnmarshalGQL(x any) error { return unmarshalEnum(x, v, projectRoles) }
func (v UserKind) MarshalGQL(w io.Writer)       { marshalEnum(w, v) }
func (v *UserKind) UnmarshalGQL(x any) error    { return unmarshalEnum(x, v, userKinds) }
func (v ClusterStatus) MarshalGQL(w io.Writer)  { marshalEnum(w, v) }
func (v *ClusterStatus) UnmarshalGQL(x any) error {
	return unmarshalEnum(x, v, clusterStatuses)
}
func (v DeploymentStage) MarshalGQL(w io.Writer) { marshalEnum(w, v) }
func (v *DeploymentStage) UnmarshalGQL(x any) error {
	return unmarshalEnum(x, v, deploymentStages)
}
func (v ApprovalDecision) MarshalGQL(w io.Writer) { marshalEnum(w, v) }
func (v *ApprovalDecision) UnmarshalGQL(x any) error {
	return unmarshalEnum(x, v, approvalDecisions)
}
func (v PlanName) MarshalGQL(w io.Writer)        { marshalEnum(w, v) }
func (v *PlanName) UnmarshalGQL(x any) error     { return unmarshalEnum(x, v, planNames) }
func (v LimitedResource) MarshalGQL(w io.Writer) { marshalEnum(w, v) }
func (v *LimitedResource) UnmarshalGQL(x any) error {
	return unmarshalEnum(x, v, limitedResources)
}

func (v VariableScope) MarshalGQL(w io.Writer) { marshalEnum(w, v) }
func (v *VariableScope) UnmarshalGQL(x any) error {
	return unmarshalEnum(x, v, variableScopes)
}

func (v ConfigChangeKind) MarshalGQL(w io.Writer) { marshalEnum(w, v) }
func (v *ConfigChangeKind) UnmarshalGQL(x any) error {
	return unmarshalEnum(x, v, configChangeKinds)
}

func (v CommandKind) MarshalGQL(w io.Writer)      { marshalEnum(w, v) }
func (v *CommandKind) UnmarshalGQL(x any) error   { return unmarshalEnum(x, v, commandKinds) }
func (v CommandStatus) MarshalGQL(w io.Writer)    { marshalEnum(w, v) }
func (v *CommandStatus) UnmarshalGQL(x any) error { return unmarshalEnum(x, v, commandStatuses) }

// Valid reports whether the role is one the schema knows.
func (v TenantRole) Valid() bool  { return slices.Contains(tenantRoles, v) }
func (v ProjectRole) Valid() bool { return slices.Contains(projectRoles, v) }
func (v UserKind) Valid() bool    { return slices.Contains(userKinds, v) }
func (v PlanName) Valid() bool    { return slices.Contains(planNames, v) }

func marshalEnum[T ~string](w io.Writer, v T) {
	_, _ = io.WriteString(w, strconv.Quote(string(v)))
}

func unmarshalEnum[T ~string](x any, dst *T, values []T) error {
	s, ok := x.(string)
	if !ok {
		return fmt.Errorf("enum value must be a string, got %T", x)
	}
	if !slices.Contains(values, T(s)) {
		return fmt.Errorf("%q is not one of %v", s, values)
	}
	*dst = T(s)
	return nil
}
