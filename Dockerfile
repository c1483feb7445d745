# syntax=docker/dockerfile:1
# The ddp-service image: ddp-controller, ddp-worker and ddpctl on Debian 12 with the CUDA 13
# runtime (cudart, cuBLAS) and NCCL, running as a non-root user. The Helm chart (charts/ddp)
# runs the controller from it, and the controller runs the workers of a job from it unless the
# job names another image (spec.kubernetes.image).
#   docker build -t ddp-service:0.1.0 .
#   docker build --build-arg CUDA_ARCHITECTURES="80;90" -t ddp-service:0.1.0 .
#
# Note [Image layout]
# The project builds and is tested on Debian 12, so both stages are Debian 12 and the runtime's
# library packages are the very ones the tests link against. CUDA and NCCL come from NVIDIA's
# images (no Debian 12 package carries CUDA 13 or a current NCCL): the build stage copies the
# toolkit (nvcc, headers) and NCCL in; the runtime stage copies only the shared libraries the
# binaries load (the CUDA table in tests/kubernetes/image_libraries.mjs), which NVIDIA builds
# for old glibc versions, so they run on Debian 12. The GPU driver library (libcuda.so.1) is
# not in the image: the NVIDIA container toolkit mounts the node's into every container that
# gets a GPU (NVIDIA_DRIVER_CAPABILITIES below). The runtime stage has no compiler, no headers
# and no package manager caches. KubernetesImageLibraries (ctest) checks that it provides every
# shared library the binaries link: each resolved by ldd, mapped to its Debian package (dpkg -S),
# which must be in the runtime apt-get list (or a dependency of one, or part of the base image);
# a library no package owns must be in the CUDA table and copied here. ibverbs-providers holds the
# user-space verbs drivers (mlx5, efa, ...) that NCCL's InfiniBand/RoCE transport loads at run time
# (dlopen, so ldd does not see it; the check requires it by name: docs/KUBERNETES.md, NCCL).

ARG CUDA_VERSION=13.0.1
ARG CUDA_SERIES=13.0

FROM nvidia/cuda:${CUDA_VERSION}-devel-ubuntu24.04 AS cuda-devel
FROM nvidia/cuda:${CUDA_VERSION}-runtime-ubuntu24.04 AS cuda-runtime

# ---- build: the project's own setup script (its apt list, CMake, Ninja) with the CUDA toolkit
FROM debian:bookworm AS build
ARG CUDA_SERIES
ARG CUDA_ARCHITECTURES=90
ARG JOBS=4
ENV DEBIAN_FRONTEND=noninteractive PATH=/usr/local/cuda/bin:$PATH
COPY --from=cuda-devel /usr/local/cuda-${CUDA_SERIES} /usr/local/cuda
COPY --from=cuda-devel /usr/include/nccl.h /usr/include/nccl_net.h /usr/local/cuda/include/
COPY --from=cuda-devel /usr/lib/x86_64-linux-gnu/libnccl.so* /usr/local/cuda/lib64/
WORKDIR /src
COPY . .
RUN rm -rf build && \
    DDP_WITH_CUDA=ON JOBS=$JOBS DDP_BUILD_TARGETS="ddp-controller ddp-worker ddpctl" \
      DDP_CMAKE_ARGS="-DCMAKE_CUDA_ARCHITECTURES=$CUDA_ARCHITECTURES" scripts/setup.sh && \
    install -D -m 0755 -t /out/bin build/bin/ddp-controller build/bin/ddp-worker build/bin/ddpctl && \
    cmake --install build --prefix /opt/ddp-engine --component engine
# This stage (docker build --target build) also holds the engine as an installed CMake package
# in /opt/ddp-engine, with the compiler and headers a trainer of one's own builds with; the
# Dockerfile in docs/EXTENDING.md builds one there and copies it into the runtime image.

# ---- runtime: Debian 12 slim, the runtime libraries only
FROM debian:bookworm-slim AS runtime
ARG CUDA_SERIES
ENV DEBIAN_FRONTEND=noninteractive
RUN apt-get update && \
    apt-get install -y --no-install-recommends \
      ca-certificates \
      ibverbs-providers \
      libcpp-httplib0.11 \
      libgloo0 \
      libhiredis0.14 \
      libibverbs1 \
      libopenblas0-pthread \
      libprometheus-cpp-core1.0 \
      libsqlite3-0 \
      libssl3 \
      libyaml-cpp0.7 \
      zlib1g \
      dataset-fashion-mnist \
    && rm -rf /var/lib/apt/lists/* /var/cache/apt/archives/*
# CUDA runtime and NCCL (Note [Image layout]); ldconfig makes the soname links.
COPY --from=cuda-runtime /usr/local/cuda-${CUDA_SERIES}/targets/x86_64-linux/lib/libcudart.so.* /usr/local/cuda/lib64/
COPY --from=cuda-runtime /usr/local/cuda-${CUDA_SERIES}/targets/x86_64-linux/lib/libcublas.so.* /usr/local/cuda/lib64/
COPY --from=cuda-runtime /usr/local/cuda-${CUDA_SERIES}/targets/x86_64-linux/lib/libcublasLt.so.* /usr/local/cuda/lib64/
COPY --from=cuda-runtime /usr/lib/x86_64-linux-gnu/libnccl.so.* /usr/local/cuda/lib64/
RUN echo /usr/local/cuda/lib64 > /etc/ld.so.conf.d/cuda.conf && ldconfig && \
    groupadd --gid 10001 ddp && \
    useradd --uid 10001 --gid ddp --no-create-home --home-dir /var/lib/ddp --shell /usr/sbin/nologin ddp && \
    install -d -o ddp -g ddp -m 0750 /var/lib/ddp
COPY --from=build /out/bin/ /usr/local/bin/
# The NVIDIA container toolkit mounts the driver (libcuda) and nvidia-smi for these.
ENV NVIDIA_DRIVER_CAPABILITIES=compute,utility
USER 10001:10001
WORKDIR /var/lib/ddp
EXPOSE 8080
ENTRYPOINT []
CMD ["ddp-controller", "--state-dir=/var/lib/ddp", "--listen=0.0.0.0:8080"]
