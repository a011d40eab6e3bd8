//! Resolves the environment names the CLI accepts (`fixture`, `range:<scenario>`, an external
//! command) into factories of fresh instances. (Being built.)
