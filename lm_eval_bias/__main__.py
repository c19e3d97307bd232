from lm_eval_bias.cli import main

if __name__ == "__main__":
    main()
