package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/Khan/genqlient/graphql"
	"github.com/spf13/cobra"

	"github.com/nebulactrl/nebula/internal/client"
)

func statusCommand(stdout, stderr io.Writer) *cobra.Command {
	r := remote{stdout: stdout, stderr: stderr}
	cmd := &cobra.Command{
		Use:   "status",
		Short: "Clusters (status, heartbeat, revisions) and the deployments under way",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := r.client()
			if err != nil {
				return err
			}
			res, err := client.Status(cmd.Context(), c.GQL)
			if err != nil {
				return explained(err)
			}
			tenants := res.Viewer.Tenants.Nodes
			if r.json() {
				return r.printJSON(map[string]any{"tenants": tenants})
			}
			tw := tabwriter.NewWriter(stdout, 2, 4, 2, ' ', 0)
			for _, t := range tenants {
				fmt.Fprintf(tw, "Tenant %s\n\n", t.Name)
				fmt.Fprintln(tw, "CLUSTER\tSTATUS\tHEARTBEAT\tREVISION (DESIRED/APPLIED)\tAGENT")
				for _, cl := range t.Clusters.Nodes {
					rev := fmt.Sprintf("%d/%d", cl.DesiredRevision, cl.AppliedRevision)
					if a := cl.ActiveRevision; a != nil {
						if a.Confirmed {
							rev += " confirmed"
						} else {
							rev += " not confirmed"
						}
					}
					agent := "-"
					if cl.Inventory != nil {
						agent = cl.Inventory.AgentVersion
					}
					fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", cl.Name, cl.Status, age(cl.LastHeartbeatAge), rev, agent)
				}
				fmt.Fprintln(tw)
				if len(t.DeploymentsUnderWay.Nodes) == 0 {
					fmt.Fprintln(tw, "No deployment under way.")
				} else {
					fmt.Fprintln(tw, "DEPLOYMENT\tSERVICE\tENVIRONMENT\tSTAGE\tSINCE")
					for _, d := range t.DeploymentsUnderWay.Nodes {
						stage := string(d.Stage)
						if d.Blocker != nil {
							stage += " (" + strings.ToLower(string(*d.Blocker)) + ")"
						}
						fmt.Fprintf(tw, "%s\t%s #%d\t%s/%s\t%s\t%s\n", d.Id, d.Release.Service.Name, d.Release.Number,
							d.Environment.Project.Name, d.Environment.Name, stage, time.Since(d.CreatedAt).Round(time.Second))
					}
				}
				fmt.Fprintln(tw)
			}
			return tw.Flush()
		},
	}
	r.bind(cmd)
	return cmd
}

func age(seconds *int) string {
	if seconds == nil {
		return "never"
	}
	return (time.Duration(*seconds) * time.Second).String() + " ago"
}

func logsCommand(stdout, stderr io.Writer) *cobra.Command {
	var (
		r            = remote{stdout: stdout, stderr: stderr}
		env, project string
		follow       bool
		since        time.Duration
		grep         string
		tail         int
	)
	cmd := &cobra.Command{
		Use:   "logs SERVICE --env ENVIRONMENT",
		Short: "What a service's containers printed in an environment; -f follows",
		Long: `What a service's containers printed in an environment (secret values redacted): the last --tail
lines, or those of the last --since; -f then follows new lines live, resuming after a dropped
connection from the last line (nothing missed or repeated). With -o json, one JSON object a line.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			c, err := r.client()
			if err != nil {
				return err
			}
			tg, err := findTarget(ctx, c, project, args[0], env)
			if err != nil {
				return err
			}
			filter := &client.LogFilter{Text: optional(grep)}
			if since > 0 {
				t := time.Now().Add(-since)
				filter.Since = &t
			}
			res, err := client.Logs(ctx, c.GQL, tg.ServiceID, tg.EnvironmentID, filter, &tail)
			if err != nil {
				return explained(err)
			}
			svc, _ := nodeAs[*client.LogsNodeService](res.Node)
			if svc == nil {
				return fmt.Errorf("no service %s to read logs of", tg.Service)
			}
			last := 0
			for _, l := range svc.Logs.Nodes {
				r.logLine(l)
				last = l.Number
			}
			if !follow {
				return nil
			}
			err = client.Follow(ctx, c,
				func(ctx context.Context, ws graphql.WebSocketClient) (chan client.FollowLogsWsResponse, string, error) {
					return client.FollowLogs(ctx, ws, tg.ServiceID, tg.EnvironmentID, &last, &client.LogFilter{Text: filter.Text})
				},
				func(res client.FollowLogsWsResponse) (bool, error) {
					if err := client.Refusal(res.Errors); err != nil {
						return false, err
					}
					if l := res.Data.ServiceLogs; l.Number > last {
						r.logLine(l)
						last = l.Number
					}
					return false, nil
				},
				func(why error, wait time.Duration) {
					fmt.Fprintf(stderr, "nebula: lost the connection (%v); following again in %s\n", why, wait.Round(100*time.Millisecond))
				})
			if ctx.Err() != nil {
				return nil // interrupted: following ends there
			}
			return explained(err)
		},
	}
	fs := cmd.Flags()
	fs.StringVarP(&env, "env", "e", "", "the environment, by name or id")
	fs.StringVarP(&project, "project", "p", os.Getenv("NEBULA_PROJECT"), "the project, by name or id (NEBULA_PROJECT)")
	fs.BoolVarP(&follow, "follow", "f", false, "follow new lines live")
	fs.DurationVar(&since, "since", 0, "lines of the last DURATION (e.g. 10m)")
	fs.StringVar(&grep, "grep", "", "only lines containing this text")
	fs.IntVar(&tail, "tail", 100, "how many of the last lines to show first (at most 1000)")
	_ = cmd.MarkFlagRequired("env")
	r.bind(cmd)
	return cmd
}

func (r *remote) logLine(l client.LogLine) {
	if r.json() {
		b, _ := json.Marshal(l)
		fmt.Fprintf(r.stdout, "%s\n", b)
		return
	}
	out := r.stdout
	if l.Stream == client.LogStreamStderr {
		out = r.stderr
	}
	fmt.Fprintf(out, "%s %s %s\n", l.At.Local().Format("15:04:05.000"), l.Pod, l.Text)
}

func auditCommand(stdout, stderr io.Writer) *cobra.Command {
	var (
		r              = remote{stdout: stdout, stderr: stderr}
		tenant, action string
		since          time.Duration
		limit          int
	)
	cmd := &cobra.Command{
		Use:   "audit",
		Short: "A tenant's audit history, newest first (tenant admins)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := cmd.Context()
			c, err := r.client()
			if err != nil {
				return err
			}
			v, err := client.Viewer(ctx, c.GQL)
			if err != nil {
				return explained(err)
			}
			var id string
			var names []string
			for _, t := range v.Viewer.Tenants.Nodes {
				names = append(names, t.Name)
				if t.Name == tenant || t.Id == tenant || (tenant == "" && len(v.Viewer.Tenants.Nodes) == 1) {
					id = t.Id
				}
			}
			if id == "" {
				return fmt.Errorf("say which tenant with --tenant (%s)", strings.Join(names, ", "))
			}
			filter := &client.AuditEventFilter{Action: optional(action)}
			if since > 0 {
				t := time.Now().Add(-since)
				filter.Since = &t
			}
			var events []client.AuditNodeTenantAuditEventsAuditEventConnectionNodesAuditEvent
			var after *string
			for len(events) < limit {
				n := min(100, limit-len(events))
				res, err := client.Audit(ctx, c.GQL, id, &n, after, filter)
				if err != nil {
					return explained(err)
				}
				t, _ := nodeAs[*client.AuditNodeTenant](res.Node)
				if t == nil {
					return fmt.Errorf("no tenant %s", tenant)
				}
				events = append(events, t.AuditEvents.Nodes...)
				if !t.AuditEvents.PageInfo.HasNextPage {
					break
				}
				after = t.AuditEvents.PageInfo.EndCursor
			}
			if r.json() {
				return r.printJSON(events)
			}
			tw := tabwriter.NewWriter(stdout, 2, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "WHEN\tACTION\tBY\tTARGET\tFROM")
			for _, e := range events {
				by := "the control plane"
				if e.Actor != nil {
					by = e.Actor.Email
				}
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", e.CreatedAt.Local().Format(time.DateTime), e.Action, by, e.TargetType, e.ClientAddress)
			}
			return tw.Flush()
		},
	}
	cmd.Flags().StringVar(&tenant, "tenant", "", "the tenant, by name or id (default: the only one)")
	cmd.Flags().StringVar(&action, "action", "", "only this action, e.g. deployment.create")
	cmd.Flags().DurationVar(&since, "since", 0, "events of the last DURATION")
	cmd.Flags().IntVar(&limit, "limit", 50, "at most this many events")
	r.bind(cmd)
	return cmd
}
