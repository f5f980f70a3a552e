# kumitate: HTTP (/v1) + MCP (/mcp) for the five bundled services, in one container.
#
#   docker build -t kumitate .
#   docker run --rm -p 8000:8000 -v kumitate-data:/var/lib/kumitate -e KUMITATE_TOKENS_FILE=/run/secrets/tokens kumitate
#
# Stage 1 builds kumitate (runtime + services' dependencies) into a virtual environment; stage 2
# copies that environment and the project files the runtime reads (generated/, handlers/, data/,
# specs/) into a slim image that runs as an unprivileged user. No compiler reaches the final image.
ARG PYTHON_IMAGE=python:3.11-slim-bookworm

FROM ${PYTHON_IMAGE} AS build
ENV PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1
WORKDIR /src
COPY pyproject.toml README.md ./
COPY kumitate kumitate
COPY codegen codegen
# The pins live in pyproject.toml: the wheel of this checkout with the bundled services' extra.
RUN python -m venv /opt/venv \
 && /opt/venv/bin/pip install --no-cache-dir ".[services]"

FROM ${PYTHON_IMAGE} AS runtime
RUN useradd --system --uid 10001 --user-group --home-dir /app --no-create-home --shell /usr/sbin/nologin kumitate \
 && mkdir -p /var/lib/kumitate \
 && chown kumitate:kumitate /var/lib/kumitate
COPY --from=build /opt/venv /opt/venv
WORKDIR /app
COPY pyproject.toml ./
COPY specs specs
COPY generated generated
COPY handlers handlers
COPY samples samples
COPY data data
ENV PATH=/opt/venv/bin:$PATH \
    PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    KUMITATE_PROJECT=/app \
    KUMITATE_DATA_DIR=/var/lib/kumitate
USER 10001:10001
VOLUME ["/var/lib/kumitate"]
EXPOSE 8000
# Liveness: /healthz answers 200 while the process serves (no token needed).
HEALTHCHECK --interval=30s --timeout=5s --start-period=90s --retries=3 \
  CMD ["python", "-c", "import urllib.request; urllib.request.urlopen('http://127.0.0.1:8000/healthz', timeout=4)"]
CMD ["kumitate", "serve", "--host", "0.0.0.0", "--port", "8000"]
