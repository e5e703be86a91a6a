import { useEffect, useState } from 'preact/hooks';
import { graphql } from './gql';
import { run, follow } from './api';
import type { ConsoleLogTailSubscription } from './gql/graphql';
import { Problem, html } from './ui';

const Logs = graphql(`
  query ConsoleLogs($service: ID!, $env: ID!, $filter: LogFilter) {
    node(id: $service) {
      ... on Service {
        name
        logs(environmentId: $env, filter: $filter, last: 200) {
          nodes { number at stream text pod }
        }
      }
    }
  }
`);

const LogTail = graphql(`
  subscription ConsoleLogTail($service: ID!, $env: ID!, $after: Int, $filter: LogFilter) {
    serviceLogs(serviceId: $service, environmentId: $env, after: $after, filter: $filter) {
      number at stream text pod
    }
  }
`);

type LogLine = ConsoleLogTailSubscription['serviceLogs'];

// LogsView shows a service's last lines in an environment, then follows
// them live, resuming after a dropped connection from the last line seen.
export function LogsView({ service, env }: { service: string; env: string }) {
  const [name, setName] = useState('');
  const [lines, setLines] = useState<LogLine[]>([]);
  const [text, setText] = useState('');
  const [applied, setApplied] = useState('');
  const [live, setLive] = useState<{ on: boolean; why?: string }>({ on: false });
  const [error, setError] = useState('');
  useEffect(() => {
    const filter = applied ? { text: applied } : null;
    let last = 0;
    let kept: LogLine[] = [];
    let stop: (() => void) | null = null;
    let gone = false;
    run(Logs, { service, env, filter }).then(
      (d) => {
        if (gone) return;
        const svc = d.node && 'logs' in d.node ? (d.node as { name: string; logs: { nodes: LogLine[] } }) : null;
        if (!svc) {
          setError('No such service, or not yours to see.');
          return;
        }
        setName(svc.name);
        kept = svc.logs.nodes;
        last = kept.length ? kept[kept.length - 1].number : 0;
        setLines(kept);
        stop = follow(
          LogTail,
          () => ({ service, env, after: last, filter }),
          (d) => {
            const l = d.serviceLogs;
            if (l.number <= last) return;
            last = l.number;
            kept = [...kept, l].slice(-2000);
            setLines(kept);
          },
          (on, why) => setLive({ on, why }),
        );
      },
      (e: Error) => setError(e.message),
    );
    return () => {
      gone = true;
      stop?.();
    };
  }, [service, env, applied]);
  if (error) return html`<${Problem} error=${error} />`;
  return html`
    <p><a href="#/">← Overview</a></p>
    <h1>Logs of ${name}</h1>
    <form class="deploy" aria-label="Filter the logs" onSubmit=${(e: Event) => { e.preventDefault(); setApplied(text); }}>
      <label for="log-text">Lines containing</label>
      <input id="log-text" value=${text} onInput=${(e: Event) => setText((e.target as HTMLInputElement).value)} />
      <button type="submit">Filter</button>
    </form>
    <p><span class=${live.on ? 'live on' : 'live'} role="status">${live.on ? 'live' : 'reconnecting…'}</span></p>
    <ol class="logs" aria-label="Log lines">
      ${lines.map(
        (l) => html`<li data-number=${l.number} class=${l.stream.toLowerCase()}>
          <time datetime=${l.at}>${new Date(l.at).toLocaleTimeString()}</time> <span class="muted">${l.pod}</span> ${l.text}</li>`,
      )}
    </ol>
  `;
}
