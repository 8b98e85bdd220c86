{{/* The pod template of the Deployment, and of the StatefulSet in sharded mode. */}}
{{- define "lagsight.podTemplate" -}}
template:
  metadata:
    annotations:
      # A changed configuration rolls the pods.
      checksum/config: {{ include (print $.Template.BasePath "/configmap.yaml") . | sha256sum }}
      {{- with .Values.podAnnotations }}
      {{- toYaml . | nindent 6 }}
      {{- end }}
    labels:
      {{- include "lagsight.selectorLabels" . | nindent 6 }}
      {{- with .Values.podLabels }}
      {{- toYaml . | nindent 6 }}
      {{- end }}
  spec:
    {{- with .Values.imagePullSecrets }}
    imagePullSecrets:
      {{- toYaml . | nindent 6 }}
    {{- end }}
    securityContext:
      {{- toYaml .Values.podSecurityContext | nindent 6 }}
    containers:
      - name: lagsight
        image: "{{ .Values.image.repository }}:{{ .Values.image.tag | default .Chart.AppVersion }}"
        imagePullPolicy: {{ .Values.image.pullPolicy }}
        args:
          - --config.file=/etc/lagsight/config/lagsight.yaml
          - --web.listen-address=:{{ .Values.service.port }}
          - --log.level={{ .Values.logLevel }}
          - --log.format={{ .Values.logFormat }}
          {{- if .Values.webConfig.existingSecret }}
          - --web.config.file=/etc/lagsight/web/web.yml
          {{- end }}
          {{- if .Values.sharding.enabled }}
          # Each pod's shard is the ordinal ending its name (lagsight-2: shard 2).
          - --shard=auto
          - --total-shards={{ include "lagsight.shards" . }}
          {{- end }}
          {{- range .Values.extraArgs }}
          - {{ . | quote }}
          {{- end }}
        {{- if or .Values.secretEnv .Values.env .Values.sharding.enabled }}
        env:
          {{- if .Values.sharding.enabled }}
          # --shard=auto reads the pod's name from here.
          - name: HOSTNAME
            valueFrom:
              fieldRef:
                fieldPath: metadata.name
          {{- end }}
          {{- range $name, $ref := .Values.secretEnv }}
          - name: {{ $name }}
            valueFrom:
              secretKeyRef:
                name: {{ required (printf "secretEnv.%s.secretName is required" $name) $ref.secretName }}
                key: {{ required (printf "secretEnv.%s.key is required" $name) $ref.key }}
          {{- end }}
          {{- with .Values.env }}
          {{- toYaml . | nindent 10 }}
          {{- end }}
        {{- end }}
        {{- with .Values.envFrom }}
        envFrom:
          {{- toYaml . | nindent 10 }}
        {{- end }}
        ports:
          - name: http
            containerPort: {{ .Values.service.port }}
            protocol: TCP
        livenessProbe:
          httpGet:
            path: /healthz
            port: http
            scheme: {{ include "lagsight.scheme" . }}
            {{- with .Values.probes.httpHeaders }}
            httpHeaders:
              {{- toYaml . | nindent 14 }}
            {{- end }}
          {{- toYaml .Values.probes.liveness | nindent 10 }}
        readinessProbe:
          httpGet:
            path: /readyz
            port: http
            scheme: {{ include "lagsight.scheme" . }}
            {{- with .Values.probes.httpHeaders }}
            httpHeaders:
              {{- toYaml . | nindent 14 }}
            {{- end }}
          {{- toYaml .Values.probes.readiness | nindent 10 }}
        resources:
          {{- toYaml .Values.resources | nindent 10 }}
        securityContext:
          {{- toYaml .Values.securityContext | nindent 10 }}
        volumeMounts:
          - name: config
            mountPath: /etc/lagsight/config
            readOnly: true
          {{- if .Values.webConfig.existingSecret }}
          - name: web-config
            mountPath: /etc/lagsight/web
            readOnly: true
          {{- end }}
    volumes:
      - name: config
        configMap:
          name: {{ include "lagsight.fullname" . }}
      {{- if .Values.webConfig.existingSecret }}
      - name: web-config
        secret:
          secretName: {{ .Values.webConfig.existingSecret }}
      {{- end }}
    {{- with .Values.nodeSelector }}
    nodeSelector:
      {{- toYaml . | nindent 6 }}
    {{- end }}
    {{- with .Values.affinity }}
    affinity:
      {{- toYaml . | nindent 6 }}
    {{- end }}
    {{- with .Values.tolerations }}
    tolerations:
      {{- toYaml . | nindent 6 }}
    {{- end }}
{{- end }}
