// Command check verifies that a running simcluster (hack/simcluster) behaves like
// a real cluster for what NebulaCtrl's agent e2e tests need:
//
//   - a Deployment (2 replicas, digest-pinned image, readiness probe) rolls out to
//     readyReplicas == 2 with both pods Ready (kwok's fast stages);
//   - a Deployment whose pods carry nebula.dev/unready=true stays NOT Ready (the
//     custom Stage in hack/simcluster/stages/pod-unready.yaml), and the label flips
//     readiness of a live pod both ways;
//   - ServiceAccount tokens (TokenRequest) authenticate against the apiserver;
//   - deleting the namespace removes everything (namespace + GC controllers).
//
// Usage: go run ./check [-kubeconfig PATH] [-timeout 90s] [-hold 5s] [-keep]
// (run from hack/simcluster; KUBECONFIG is used when -kubeconfig is not given).
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

const (
	unreadyLabel = "nebula.dev/unready"
	image        = "registry.example.com/x@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
)

var (
	timeout = flag.Duration("timeout", 90*time.Second, "bound for each wait")
	hold    = flag.Duration("hold", 5*time.Second, "how long the unready Deployment must stay not Ready")
	keep    = flag.Bool("keep", false, "keep the test namespace")

	passed, failed int
	start          = time.Now()
)

func main() {
	kubeconfig := flag.String("kubeconfig", os.Getenv("KUBECONFIG"), "kubeconfig of the simcluster")
	flag.Parse()
	if *kubeconfig == "" {
		fatalf("no kubeconfig: pass -kubeconfig or set KUBECONFIG (eval \"$(hack/simcluster/simcluster.sh env)\")")
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", *kubeconfig)
	if err != nil {
		fatalf("kubeconfig: %v", err)
	}
	cfg.QPS, cfg.Burst = 50, 100
	cs := kubernetes.NewForConfigOrDie(cfg)
	ctx := context.Background()

	v, err := cs.Discovery().ServerVersion()
	if err != nil {
		fatalf("server version: %v", err)
	}
	logf("apiserver %s at %s", v.GitVersion, cfg.Host)

	ns := fmt.Sprintf("simcheck-%d", time.Now().UnixNano()%1_000_000_000)
	_, err = cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{})
	if err != nil {
		fatalf("create namespace: %v", err)
	}
	logf("namespace %s created", ns)

	step("default ServiceAccount created (serviceaccount controller)", func() error {
		return poll(func() (bool, error) {
			_, err := cs.CoreV1().ServiceAccounts(ns).Get(ctx, "default", metav1.GetOptions{})
			if apierrors.IsNotFound(err) {
				return false, nil
			}
			return err == nil, err
		})
	})

	step("ServiceAccount token authenticates (TokenRequest + SelfSubjectReview)", func() error {
		tr, err := cs.CoreV1().ServiceAccounts(ns).CreateToken(ctx, "default",
			&authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{}}, metav1.CreateOptions{})
		if err != nil {
			return err
		}
		saCfg := rest.AnonymousClientConfig(cfg)
		saCfg.BearerToken = tr.Status.Token
		who, err := kubernetes.NewForConfigOrDie(saCfg).AuthenticationV1().SelfSubjectReviews().
			Create(ctx, &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
		if err != nil {
			return err
		}
		want := "system:serviceaccount:" + ns + ":default"
		if who.Status.UserInfo.Username != want {
			return fmt.Errorf("token authenticated as %q, want %q", who.Status.UserInfo.Username, want)
		}
		return nil
	})

	t0 := time.Now()
	for _, d := range []*appsv1.Deployment{deployment(ns, "ready", false), deployment(ns, "unready", true)} {
		if _, err := cs.AppsV1().Deployments(ns).Create(ctx, d, metav1.CreateOptions{}); err != nil {
			fatalf("create deployment %s: %v", d.Name, err)
		}
	}
	logf("deployments ready (2 replicas) and unready (2 replicas, label %s=true) created", unreadyLabel)

	step("deployment 'ready': readyReplicas == 2 and both pods Ready", func() error {
		err := poll(func() (bool, error) {
			d, err := cs.AppsV1().Deployments(ns).Get(ctx, "ready", metav1.GetOptions{})
			if err != nil {
				return false, err
			}
			if d.Status.ReadyReplicas != 2 || d.Status.AvailableReplicas != 2 || d.Status.UpdatedReplicas != 2 {
				return false, nil
			}
			ready, notReady, err := podsReady(ctx, cs, ns, "app=ready")
			return ready == 2 && notReady == 0, err
		})
		logf("  (%.2fs after the Deployments were created)", time.Since(t0).Seconds())
		return err
	})

	step("deployment 'unready': 2 pods Running with an IP but Ready=False", func() error {
		return poll(func() (bool, error) {
			pods, err := cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "app=unready"})
			if err != nil || len(pods.Items) != 2 {
				return false, err
			}
			for i := range pods.Items {
				p := &pods.Items[i]
				c := condition(p, corev1.PodReady)
				if p.Status.Phase != corev1.PodRunning || p.Status.PodIP == "" || c == nil ||
					c.Status != corev1.ConditionFalse || c.Reason != "ContainersNotReady" ||
					len(p.Status.ContainerStatuses) != 1 || p.Status.ContainerStatuses[0].Ready {
					return false, nil
				}
			}
			return true, nil
		})
	})

	step(fmt.Sprintf("deployment 'unready' stays at readyReplicas == 0 for %s", *hold), func() error {
		deadline := time.Now().Add(*hold)
		for time.Now().Before(deadline) {
			d, err := cs.AppsV1().Deployments(ns).Get(ctx, "unready", metav1.GetOptions{})
			if err != nil {
				return err
			}
			ready, _, err := podsReady(ctx, cs, ns, "app=unready")
			if err != nil {
				return err
			}
			if d.Status.ReadyReplicas != 0 || d.Status.AvailableReplicas != 0 || ready != 0 {
				return fmt.Errorf("became ready: readyReplicas=%d availableReplicas=%d readyPods=%d",
					d.Status.ReadyReplicas, d.Status.AvailableReplicas, ready)
			}
			if d.Status.Replicas != 2 {
				return fmt.Errorf("replicas=%d, want 2", d.Status.Replicas)
			}
			time.Sleep(250 * time.Millisecond)
		}
		return nil
	})

	step("removing the label from an unready pod makes it Ready (readyReplicas 0 -> 1)", func() error {
		p, err := firstPod(ctx, cs, ns, "app=unready")
		if err != nil {
			return err
		}
		patch := fmt.Sprintf(`{"metadata":{"labels":{%q:null}}}`, unreadyLabel)
		if _, err := cs.CoreV1().Pods(ns).Patch(ctx, p, types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
			return err
		}
		return waitReadyReplicas(ctx, cs, ns, "unready", 1)
	})

	step("adding the label to a Ready pod makes it not Ready (readyReplicas 2 -> 1)", func() error {
		p, err := firstPod(ctx, cs, ns, "app=ready")
		if err != nil {
			return err
		}
		patch := fmt.Sprintf(`{"metadata":{"labels":{%q:"true"}}}`, unreadyLabel)
		if _, err := cs.CoreV1().Pods(ns).Patch(ctx, p, types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
			return err
		}
		return waitReadyReplicas(ctx, cs, ns, "ready", 1)
	})

	if *keep {
		logf("keeping namespace %s (-keep)", ns)
	} else {
		step("namespace deletion removes deployments and pods (namespace + garbage-collector controllers, kwok pod-delete)", func() error {
			if err := cs.CoreV1().Namespaces().Delete(ctx, ns, metav1.DeleteOptions{}); err != nil {
				return err
			}
			return poll(func() (bool, error) {
				_, err := cs.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
				if apierrors.IsNotFound(err) {
					return true, nil
				}
				return false, err
			})
		})
	}

	fmt.Printf("simcheck: %d passed, %d failed\n", passed, failed)
	logf("total %.2fs", time.Since(start).Seconds())
	if failed > 0 {
		os.Exit(1)
	}
}

func deployment(ns, name string, unready bool) *appsv1.Deployment {
	labels := map[string]string{"app": name}
	podLabels := map[string]string{"app": name}
	if unready {
		podLabels[unreadyLabel] = "true"
	}
	replicas := int32(2)
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: appsv1.DeploymentSpec{
			Replicas: &replicas,
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: podLabels},
				Spec: corev1.PodSpec{
					Containers: []corev1.Container{{
						Name:  "app",
						Image: image,
						Ports: []corev1.ContainerPort{{Name: "http", ContainerPort: 8080}},
						ReadinessProbe: &corev1.Probe{
							ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{
								Path: "/healthz", Port: intstr.FromString("http"),
							}},
							PeriodSeconds: 5,
						},
					}},
				},
			},
		},
	}
}

func podsReady(ctx context.Context, cs kubernetes.Interface, ns, selector string) (ready, notReady int, err error) {
	pods, err := cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: selector})
	if err != nil {
		return 0, 0, err
	}
	for i := range pods.Items {
		if pods.Items[i].DeletionTimestamp != nil {
			continue
		}
		if c := condition(&pods.Items[i], corev1.PodReady); c != nil && c.Status == corev1.ConditionTrue {
			ready++
		} else {
			notReady++
		}
	}
	return ready, notReady, nil
}

func waitReadyReplicas(ctx context.Context, cs kubernetes.Interface, ns, name string, want int32) error {
	return poll(func() (bool, error) {
		d, err := cs.AppsV1().Deployments(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		return d.Status.ReadyReplicas == want && d.Status.Replicas == 2, nil
	})
}

func firstPod(ctx context.Context, cs kubernetes.Interface, ns, selector string) (string, error) {
	pods, err := cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: selector})
	if err != nil {
		return "", err
	}
	if len(pods.Items) == 0 {
		return "", fmt.Errorf("no pod matches %s", selector)
	}
	return pods.Items[0].Name, nil
}

func condition(p *corev1.Pod, t corev1.PodConditionType) *corev1.PodCondition {
	for i := range p.Status.Conditions {
		if p.Status.Conditions[i].Type == t {
			return &p.Status.Conditions[i]
		}
	}
	return nil
}

func poll(cond func() (bool, error)) error {
	return wait.PollUntilContextTimeout(context.Background(), 100*time.Millisecond, *timeout, true,
		func(context.Context) (bool, error) { return cond() })
}

func step(name string, fn func() error) {
	t := time.Now()
	if err := fn(); err != nil {
		failed++
		fmt.Printf("FAIL %-95s %6.2fs: %v\n", name, time.Since(t).Seconds(), err)
		return
	}
	passed++
	fmt.Printf("ok   %-95s %6.2fs\n", name, time.Since(t).Seconds())
}

func logf(format string, args ...any) {
	fmt.Printf("[%6.2fs] %s\n", time.Since(start).Seconds(), fmt.Sprintf(format, args...))
}

func fatalf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "simcheck: "+format+"\n", args...)
	fmt.Printf("simcheck: %d passed, %d failed\n", passed, failed+1)
	os.Exit(1)
}
