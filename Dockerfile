# gcsh for a workshop seat that is not Linux (macOS, Windows): the host
# backend (no GPU), the lessons and the tests, on Debian 12.
#
#   docker build -t gcsh .
#   docker run -it --rm --shm-size=1g gcsh               # make run: 2 ranks
#   docker run -it --rm --shm-size=1g gcsh build/gcsh -n 4   # the lessons' 4
#   docker run --rm --shm-size=1g gcsh make preflight     # the seat's check
#
# tests/sh/container.sh builds and runs it where `docker info` works.
# --shm-size: the ranks' windows are shared memory (/dev/shm, 64 MB by
# default in a container).
FROM debian:12

# What scripts/install-deps.sh names for Debian: build (make run) and test
# (make test, the lessons' checks); pkg-config finds Lua 5.4 and jansson.
RUN apt-get update \
 && apt-get install -y --no-install-recommends \
      gcc make pkg-config libc6-dev \
      libopenmpi-dev openmpi-bin \
      liblua5.4-dev libreadline-dev libjansson-dev \
      tmux lua5.4 python3 lua-dkjson procps \
 && rm -rf /var/lib/apt/lists/*

# mpirun refuses root: the seat is a user of its own.  Open MPI's
# single-copy path (CMA) needs ptrace rights a container does not give.
RUN useradd --create-home attendee
ENV OMPI_MCA_btl_vader_single_copy_mechanism=none
WORKDIR /home/attendee/gcsh
COPY --chown=attendee:attendee . .
USER attendee
RUN make CUDA=0
CMD ["make", "run"]
