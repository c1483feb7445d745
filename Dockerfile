# syntax=docker/dockerfile:1
# The ddp-service images, on Debian 12, running as a non-root user (uid 10001):
#   runtime (the default target): ddp-controller, ddp-worker and ddpctl with the CUDA 13 runtime
#     (cudart, cuBLAS) and NCCL. The controller runs the workers of a job from it unless the job
#     names another image (spec.kubernetes.image).
#   controller: ddp-controller and ddpctl, built without CUDA, with no CUDA or NCCL library (the
#     controller links none); the Helm chart (charts/ddp) runs the controller from it.
#   docker build -t ddp-service:0.1.0 .
#   docker build --target controller -t ddp-service-controller:0.1.0 .
#   docker build --build-arg CUDA_ARCHITECTURES=90 -t ddp-service:0.1.0 .   # H100 only, faster
#
# Note [Image layout]
# The project builds and is tested on Debian 12, so every stage is Debian 12 and the runtime's
# library packages are the very ones the tests link against. CUDA and NCCL come from NVIDIA's
# images (no Debian 12 package carries CUDA 13 or a current NCCL): the build stage copies the
# toolkit (nvcc, headers) and NCCL in; the runtime stage copies only the shared libraries the
# binaries load (the CUDA table in tests/kubernetes/image_libraries.mjs), which NVIDIA builds
# for old glibc versions, so they run on Debian 12. Those are staged inside NVIDIA's image
# (stage cuda-libs, scripts/stage_runtime_libs.sh: each real file once, the soname links as
# links) and shipped by one directory COPY, which keeps symlinks: a COPY of a glob such as
# lib*.so.* follows them and would store every library twice (cublasLt alone is hundreds of MB;
# KubernetesImageLibraries refuses such a COPY). The GPU driver library (libcuda.so.1) is not in
# the image: the NVIDIA container toolkit mounts the node's into every container that gets a GPU
# (NVIDIA_DRIVER_CAPABILITIES below). CUDA 13 needs NVIDIA driver 580 or newer on the nodes; no
# CUDA 12 variant exists to build (the project targets CUDA 13 only). The runtime stage has no
# compiler, no headers and no package manager caches. KubernetesImageLibraries (ctest) checks
# that both images provide every shared library their binaries link: each resolved by ldd,
# mapped to its Debian package (dpkg -S), which must be in the stage's apt-get list (or a
# dependency of one, or part of the base image); a library no package owns must be in the CUDA
# table and staged here (the controller image needs none). ibverbs-providers holds the
# user-space verbs drivers (mlx5, efa, ...) that NCCL's InfiniBand/RoCE transport loads at run
# time (dlopen, so ldd does not see it; the check requires it by name: docs/KUBERNETES.md, NCCL).
#
# Note [CUDA architectures]
# CUDA_ARCHITECTURES (a CMake list) names the GPUs the kernels are compiled for: 80 (A100),
# 86 (A10G, A40, RTX A6000), 89 (L4, L40S), 90 (H100, H200). A GPU outside the list has no
# kernels. Each one adds compile time and image size: build fewer for a known fleet
# (CUDA_ARCHITECTURES=90), or add others (e.g. "80;86;89;90;100" for B200). The CMake default
# stays one architecture (cmake/Cuda.cmake), so CI compiles once.

ARG CUDA_VERSION=13.0.1
ARG CUDA_SERIES=13.0

FROM nvidia/cuda:${CUDA_VERSION}-devel-ubuntu24.04 AS cuda-devel
FROM nvidia/cuda:${CUDA_VERSION}-runtime-ubuntu24.04 AS cuda-runtime

# ---- cuda-libs: the CUDA runtime and NCCL libraries the runtime stage ships, staged in NVIDIA's
# image where their soname links are still links (Note [Image layout]).
FROM cuda-runtime AS cuda-libs
ARG CUDA_SERIES
COPY scripts/stage_runtime_libs.sh /tmp/
RUN bash /tmp/stage_runtime_libs.sh --from /usr/local/cuda-${CUDA_SERIES}/targets/x86_64-linux/lib \
      --from /usr/lib/x86_64-linux-gnu /staged libcudart libcublas libcublasLt libnccl

# ---- build: the project's own setup script (its apt list, CMake, Ninja) with the CUDA toolkit
FROM debian:bookworm AS build
ARG CUDA_SERIES
# Note [CUDA architectures]
ARG CUDA_ARCHITECTURES="80;86;89;90"
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

# ---- controller-build: ddp-controller and ddpctl built without CUDA, for the controller image
# (ddpctl links the worker's code, which links CUDA in the build stage; the controller links none).
FROM debian:bookworm AS controller-build
ARG JOBS=4
ENV DEBIAN_FRONTEND=noninteractive
WORKDIR /src
COPY . .
RUN rm -rf build && \
    DDP_WITH_CUDA=OFF JOBS=$JOBS DDP_BUILD_TARGETS="ddp-controller ddpctl" scripts/setup.sh && \
    install -D -m 0755 -t /out/bin build/bin/ddp-controller build/bin/ddpctl

# ---- controller: Debian 12 slim, ddp-controller and ddpctl, no CUDA or NCCL (docker build
# --target controller; the chart's controller.image)
FROM debian:bookworm-slim AS controller
ENV DEBIAN_FRONTEND=noninteractive
RUN apt-get update && \
    apt-get install -y --no-install-recommends \
      ca-certificates \
      libcpp-httplib0.11 \
      libopenblas0-pthread \
      libprometheus-cpp-core1.0 \
      libsqlite3-0 \
      libssl3 \
      libyaml-cpp0.7 \
      zlib1g \
    && rm -rf /var/lib/apt/lists/* /var/cache/apt/archives/* && \
    groupadd --gid 10001 ddp && \
    useradd --uid 10001 --gid ddp --no-create-home --home-dir /var/lib/ddp --shell /usr/sbin/nologin ddp && \
    install -d -o ddp -g ddp -m 0750 /var/lib/ddp
COPY --from=controller-build /out/bin/ /usr/local/bin/
USER 10001:10001
WORKDIR /var/lib/ddp
EXPOSE 8080
ENTRYPOINT []
CMD ["ddp-controller", "--state-dir=/var/lib/ddp", "--listen=0.0.0.0:8080"]

# ---- runtime (the default target, so it stays last): Debian 12 slim, the runtime libraries only
FROM debian:bookworm-slim AS runtime
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
# CUDA runtime and NCCL (Note [Image layout]): one directory COPY, which keeps the soname links.
COPY --from=cuda-libs /staged/ /usr/local/cuda/lib64/
RUN echo /usr/local/cuda/lib64 > /etc/ld.so.conf.d/cuda.conf && ldconfig && \
    groupadd --gid 10001 ddp && \
    useradd --uid 10001 --gid ddp --no-create-home --home-dir /var/lib/ddp --shell /usr/sbin/nologin ddp && \
    install -d -o ddp -g ddp -m 0750 /var/lib/ddp
COPY --from=build /out/bin/ /usr/local/bin/
# The NVIDIA container toolkit mounts the driver (libcuda) and nvidia-smi for these; CUDA 13
# needs driver 580 or newer on the node.
ENV NVIDIA_DRIVER_CAPABILITIES=compute,utility
USER 10001:10001
WORKDIR /var/lib/ddp
EXPOSE 8080
ENTRYPOINT []
CMD ["ddp-controller", "--state-dir=/var/lib/ddp", "--listen=0.0.0.0:8080"]
