"""cdk8s entry point (`npx cdk8s synth` runs this): synthesize every variant into $CDK8S_OUTDIR."""

from sitegen.cli import main

if __name__ == "__main__":
    main(["synth"])
