/**
 * An Alertmanager configuration that routes the InferSignal alerts to a
 * Slack-compatible incoming webhook (Slack, Mattermost, Rocket.Chat …).
 * Alerts are grouped by their subject, the replica and its queue or model,
 * so one sick replica gives one notification that names it; a fleet-wide
 * overload (no instance label) gives one that says fleet-wide (the
 * generated rules hold back the per-replica pages it stands for). A
 * CRITICAL-inhibits-WARNING rule per signal keeps one saturated queue from
 * paging three times: critical and warning of one subject share a
 * notification group, so each notification shows that subject's current state.
 */
import { LABEL } from './names';
import { parseDuration } from './duration';
import { toYaml } from './rules';
import { checkOptionKeys, fieldOrDefault, rejectValue } from '@infersignal/core/signals';

export interface AlertmanagerOptions {
  /** Incoming-webhook URL (Slack-compatible JSON body). Default: a placeholder to replace. */
  webhookUrl?: string;
  /** Read the URL from a file instead (a mounted secret); wins over webhookUrl. */
  webhookUrlFile?: string;
  /** Channel override sent in the body (Slack ignores it for app webhooks). */
  channel?: string;
  /** Wait before the first notification of a group (default 30s). */
  groupWait?: string;
  /** Wait before notifying about new alerts added to a group (default 5m). */
  groupInterval?: string;
  /** Re-send a still-firing warning after (default 4h); critical re-sends after 1h. */
  repeatInterval?: string;
}

const PLACEHOLDER_WEBHOOK_URL = 'https://hooks.slack.com/services/REPLACE/WITH/YOURS';

export const ALERTMANAGER_RECEIVER = 'infersignal-webhook';

/** Labels that identify one alerting thing; CRITICAL inhibits WARNING only when these all match. */
const SAME_THING = [LABEL.signal, 'job', 'instance', LABEL.queue, LABEL.model, LABEL.memorySource, LABEL.server];

/** The subject of a notification: the replica (instance, and pod where Kubernetes adds it) and its queue or model. */
const ALERTMANAGER_GROUP_BY = ['job', 'instance', 'pod', LABEL.queue, LABEL.model];

const TITLE = [
  '[{{ .Status | toUpper }}{{ if eq .Status "firing" }}:{{ .Alerts.Firing | len }}{{ end }}] ',
  '{{ if .CommonLabels.alertname }}{{ .CommonLabels.alertname }} ({{ .CommonLabels.severity }}){{ else }}{{ .Alerts | len }} InferSignal alerts{{ end }} ',
  '{{ if .GroupLabels.instance }}on replica {{ .GroupLabels.instance }}{{ with .GroupLabels.pod }} (pod {{ . }}){{ end }}{{ else }}fleet-wide{{ end }}',
  '{{ with .GroupLabels.job }}, {{ . }}{{ end }}',
  `{{ with .GroupLabels.${LABEL.queue} }}, queue {{ . }}{{ end }}`,
  `{{ with .GroupLabels.${LABEL.model} }}, model {{ . }}{{ end }}`,
].join('');
const TEXT = [
  '{{ range .Alerts }}',
  // A group can hold firing and resolved alerts at once: each says which it is.
  '*{{ .Annotations.summary }}* ({{ .Labels.alertname }}, {{ .Labels.severity }}{{ if eq .Status "resolved" }}, resolved{{ end }})',
  '{{ .Annotations.description }}',
  'Runbook: {{ .Annotations.runbook_url }}',
  '{{ end }}',
].join('\n');

export function buildAlertmanagerConfig(options: AlertmanagerOptions = {}): Record<string, unknown> {
  checkOptionKeys(
    options,
    ['webhookUrl', 'webhookUrlFile', 'channel', 'groupWait', 'groupInterval', 'repeatInterval'],
    'options',
  );
  if (options.webhookUrl !== undefined && !/^https?:\/\/[^/\s]/.test(String(options.webhookUrl)))
    rejectValue('webhookUrl', options.webhookUrl, 'an http(s) URL');
  fieldOrDefault('webhookUrlFile', options.webhookUrlFile, { type: 'string' }, undefined);
  fieldOrDefault('channel', options.channel, { type: 'string' }, undefined);
  const groupWait = options.groupWait ?? '30s';
  const groupInterval = options.groupInterval ?? '5m';
  const repeatInterval = options.repeatInterval ?? '4h';
  parseDuration(groupWait, 'groupWait');
  parseDuration(groupInterval, 'groupInterval');
  parseDuration(repeatInterval, 'repeatInterval');
  const slack: Record<string, unknown> = {
    ...(options.webhookUrlFile
      ? { api_url_file: options.webhookUrlFile }
      : { api_url: options.webhookUrl ?? PLACEHOLDER_WEBHOOK_URL }),
    ...(options.channel ? { channel: options.channel } : {}),
    send_resolved: true,
    title: TITLE,
    text: TEXT,
  };
  return {
    route: {
      // Everything else goes to a receiver that drops it: merge the child route into your own tree.
      receiver: 'default',
      group_by: ['alertname', 'job'],
      routes: [
        {
          receiver: ALERTMANAGER_RECEIVER,
          matchers: ['alertname=~"InferSignal.+"'],
          group_by: ALERTMANAGER_GROUP_BY,
          group_wait: groupWait,
          group_interval: groupInterval,
          repeat_interval: repeatInterval,
          routes: [{ receiver: ALERTMANAGER_RECEIVER, matchers: ['severity="critical"'], repeat_interval: '1h' }],
        },
      ],
    },
    inhibit_rules: [
      {
        source_matchers: ['alertname=~"InferSignal.+"', 'severity="critical"'],
        target_matchers: ['alertname=~"InferSignal.+"', 'severity="warning"'],
        equal: SAME_THING,
      },
    ],
    receivers: [{ name: 'default' }, { name: ALERTMANAGER_RECEIVER, slack_configs: [slack] }],
  };
}

/** YAML text of the Alertmanager configuration (`amtool check-config` accepts it). */
export function renderAlertmanagerConfig(options: AlertmanagerOptions = {}): string {
  return toYaml(
    buildAlertmanagerConfig(options),
    'Generated by @infersignal/rules (infersignal-rules alertmanager). Merge the child route into your routing tree.',
  );
}
