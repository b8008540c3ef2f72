#pragma once
/// @file
/// The distributed runtime: processes started together by `mpirun` form one job, and each
/// process's devices are replicas of the job's programs (compute/replicas.h). Values move
/// between processes through MPI (Open MPI), between the devices of a process through memory.
///
///   int main(int argc, char** argv) {
///     kiln::distributed::Init(argc, argv);  // joins the job under mpirun; a job of one otherwise
///     ... distributed::Rank(), distributed::WorldSize() ...
///     kiln::distributed::Finalize();
///   }
///
/// Replica r of a job of W processes is device r / W of process (rank) r mod W. Collectives
/// between processes give up with a kiln::Error, instead of hanging, when a process disagrees on
/// what it exchanges (naming the rank and both calls) or does not answer within
/// $KILN_COLLECTIVE_TIMEOUT seconds (120 by default). After such a timeout the job cannot go on:
/// every later exchange between processes is refused with a kiln::Error, and Finalize leaves
/// without MPI_Finalize (the timed-out exchange may still be in flight). Exchanges between
/// processes run one at a time and must come in the same order in every process: make them from
/// one thread, or order the threads that make them.

#include <chrono>
#include <memory>
#include <span>
#include <string>

#include "kiln/compute/fwd.h"

namespace kiln::distributed {

/// Joins the MPI job when this process was started by mpirun (or another MPI launcher), else
/// makes a job of one process without touching MPI. Call it once, first thing in main (MPI may
/// take its own arguments out of argc/argv). Calling it again does nothing.
void Init(int& argc, char**& argv);
/// Leaves the job (MPI_Finalize) after a barrier, so that no process exits while others still
/// exchange with it. Safe to call without Init or twice, and after a timed-out exchange.
void Finalize();
/// Whether Init joined a job started by an MPI launcher (false for a job of one).
bool IsDistributed();
/// This process's rank, 0 to WorldSize()-1 (0 without Init).
int Rank();
/// The number of processes in the job (1 without Init).
int WorldSize();
/// Processes of the job on this machine (1 without Init).
int LocalSize();

/// A group of every replica of the job: `devices` devices in each process (the same number in all;
/// a kiln::Error names the ranks when they differ) joined through MPI. Collective ops in programs
/// run with model::Exec::CallReplicas or graph::Exec::CallReplicas on it exchange values with every
/// replica of every process.
std::shared_ptr<compute::ReplicaGroup> NewReplicaGroup(int devices);

/// Sums `values` over the processes of the job in rank order (a fixed order: every process gets
/// the same bits), in place. A kiln::Error when the processes pass different lengths. `what`
/// names the call in errors.
void AllReduceSum(std::span<double> values, const std::string& what = "AllReduceSum");
/// Returns once every process called it.
void Barrier();

}  // namespace kiln::distributed
