# lagsight on Debian 12, built and run with the same deploy/install-deps.sh as the README:
# `--build-only` for the build stage, `--runtime` (shared libraries only) for the image.
#
#   docker build -t lagsight .
#   docker run -p 9713:9713 -v $PWD/lagsight.yaml:/etc/lagsight/lagsight.yaml:ro lagsight
#
# Flags after the image name replace the default arguments, e.g.
#   docker run ... lagsight --config.file=/etc/lagsight/lagsight.yaml --web.config.file=/etc/lagsight/web.yml

FROM debian:12 AS build
WORKDIR /src
COPY deploy/install-deps.sh deploy/install-deps.sh
RUN deploy/install-deps.sh --build-only && rm -rf /var/lib/apt/lists/*
COPY CMakeLists.txt ./
COPY cmd cmd
COPY lib lib
RUN cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release -DBUILD_TESTING=OFF \
 && cmake --build build \
 && cmake --install build --prefix /usr/local --strip

FROM debian:12-slim
COPY deploy/install-deps.sh /tmp/lagsight/deploy/install-deps.sh
RUN /tmp/lagsight/deploy/install-deps.sh --runtime && rm -rf /tmp/lagsight /var/lib/apt/lists/*
COPY --from=build /usr/local/bin/lagsight /usr/local/bin/lagsight
COPY config/lagsight.example.yaml /usr/local/share/doc/lagsight/lagsight.example.yaml
# An unprivileged user with no home and no shell; the image never runs as root.
RUN useradd --system --uid 10001 --no-create-home --shell /usr/sbin/nologin lagsight
USER 10001:10001
EXPOSE 9713
# /healthz over plain HTTP with bash alone (no curl in the image). With a web config that turns
# on TLS or basic auth, override this check (docker run --no-healthcheck, or your orchestrator's).
HEALTHCHECK --interval=30s --timeout=5s --start-period=10s --retries=3 \
  CMD ["bash", "-c", "exec 3<>/dev/tcp/127.0.0.1/9713 && printf 'GET /healthz HTTP/1.0\\r\\n\\r\\n' >&3 && head -n1 <&3 | grep -q ' 200 '"]
ENTRYPOINT ["/usr/local/bin/lagsight"]
CMD ["--config.file=/etc/lagsight/lagsight.yaml"]
