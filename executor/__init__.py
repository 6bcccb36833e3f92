"""The numpy reference executor behind nnapi.Compilation / nnapi.Execution."""
