{{/* The name every object of the release starts with: <release>-meridian, or the release's name when it already says meridian. */}}
{{- define "meridian.fullname" -}}
{{- if contains "meridian" .Release.Name -}}
{{- .Release.Name | trunc 50 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-meridian" .Release.Name | trunc 50 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{/* Labels that select one component's pods (api or ingest): never change once installed. */}}
{{- define "meridian.selectorLabels" -}}
app.kubernetes.io/name: meridian
app.kubernetes.io/instance: {{ .root.Release.Name }}
app.kubernetes.io/component: {{ .component }}
{{- end -}}

{{- define "meridian.labels" -}}
{{ include "meridian.selectorLabels" . }}
app.kubernetes.io/version: {{ .root.Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .root.Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .root.Chart.Name .root.Chart.Version }}
{{- end -}}

{{/* The settings that are secrets: they belong in `secrets`, never in the ConfigMap. */}}
{{- define "meridian.secretNames" -}}
CLICKHOUSE_PASSWORD S3_ACCESS_KEY S3_SECRET_KEY MERIDIAN_CURSOR_SECRET
{{- end -}}

{{- define "meridian.secretName" -}}
{{- .Values.secrets.existingSecret | default (printf "%s-secrets" (include "meridian.fullname" .)) -}}
{{- end -}}

{{/*
A setting's value as the process reads it. A number YAML parsed (a float to Helm) is written
whole when it is whole, so 20000000000 stays 20000000000 and not 2e+10.
*/}}
{{- define "meridian.settingValue" -}}
{{- if kindIs "float64" . -}}
{{- if eq (. | int64 | float64) . -}}{{ . | int64 }}{{- else -}}{{ . }}{{- end -}}
{{- else -}}
{{- . -}}
{{- end -}}
{{- end -}}

{{/* A setting as a whole number (ports, partitions), checked. */}}
{{- define "meridian.intSetting" -}}
{{- $value := include "meridian.settingValue" (index .root.Values.settings .name) -}}
{{- if not (regexMatch "^[0-9]+$" $value) -}}
{{- fail (printf "settings.%s must be a whole number, not %q" .name $value) -}}
{{- end -}}
{{- $value -}}
{{- end -}}

{{/* The partitions that bound the ingest pods with work: the larger of the tasks and points topics'. */}}
{{- define "meridian.ingestBound" -}}
{{- $tasks := include "meridian.intSetting" (dict "root" . "name" "KAFKA_TASKS_PARTITIONS") | int -}}
{{- $points := include "meridian.intSetting" (dict "root" . "name" "KAFKA_POINTS_PARTITIONS") | int -}}
{{- max $tasks $points -}}
{{- end -}}

{{/*
The pod template both Deployments share: settings from the ConfigMap, secrets from the Secret,
least privilege, a writable /tmp only. Takes root, component, the component's values, command,
ports and probes.
*/}}
{{- define "meridian.podTemplate" -}}
{{- $root := .root -}}
{{- $values := .values -}}
metadata:
  labels:
    {{- include "meridian.labels" . | nindent 4 }}
  annotations:
    # A changed setting or secret rolls the pods: they read both at start only.
    checksum/config: {{ include (print $root.Template.BasePath "/configmap.yaml") $root | sha256sum }}
    checksum/secrets: {{ include (print $root.Template.BasePath "/secret.yaml") $root | sha256sum }}
spec:
  automountServiceAccountToken: false
  # No Docker-link variables: a release named meridian has a Service meridian-api, whose link
  # variable MERIDIAN_API_PORT=tcp://… would collide with the setting of that name.
  enableServiceLinks: false
  terminationGracePeriodSeconds: {{ $values.terminationGracePeriodSeconds }}
  securityContext:
    {{- toYaml $root.Values.podSecurityContext | nindent 4 }}
  {{- with $root.Values.imagePullSecrets }}
  imagePullSecrets:
    {{- toYaml . | nindent 4 }}
  {{- end }}
  containers:
    - name: {{ .component }}
      image: "{{ $root.Values.image.repository }}:{{ $root.Values.image.tag | default $root.Chart.AppVersion }}"
      imagePullPolicy: {{ $root.Values.image.pullPolicy }}
      command:
        {{- toYaml .command | nindent 8 }}
      envFrom:
        - configMapRef:
            name: {{ include "meridian.fullname" $root }}-settings
        - secretRef:
            name: {{ include "meridian.secretName" $root }}
      {{- with .ports }}
      ports:
        {{- toYaml . | nindent 8 }}
      {{- end }}
      {{- with .probes }}
      {{- toYaml . | nindent 6 }}
      {{- end }}
      resources:
        {{- toYaml $values.resources | nindent 8 }}
      securityContext:
        {{- toYaml $root.Values.securityContext | nindent 8 }}
      volumeMounts:
        - name: tmp
          mountPath: /tmp
  volumes:
    # The root filesystem is read-only; Node and its libraries may still want a scratch directory.
    - name: tmp
      emptyDir:
        sizeLimit: 64Mi
  {{- with $values.nodeSelector }}
  nodeSelector:
    {{- toYaml . | nindent 4 }}
  {{- end }}
  {{- with $values.tolerations }}
  tolerations:
    {{- toYaml . | nindent 4 }}
  {{- end }}
  {{- with $values.affinity }}
  affinity:
    {{- toYaml . | nindent 4 }}
  {{- end }}
{{- end -}}
