#pragma once
/// @file
/// The model package: Store, Scope, Variable, hyperparameters and model::Exec.

#include "kiln/model/checkpoint.h"
#include "kiln/model/exec.h"
#include "kiln/model/params.h"
#include "kiln/model/random_state.h"
#include "kiln/model/store.h"
#include "kiln/model/variable.h"
