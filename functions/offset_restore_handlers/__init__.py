"""One thin module per Lambda function: parse the input, call one library function, return its result."""
